//! The client address behind a trusted reverse proxy.
//!
//! A request's address is its TCP peer, as recorded in the audit log and
//! used by the login rate limits. Behind a proxy that peer is the proxy
//! for everyone, so `serve --trusted-proxies` names the proxies (addresses
//! or CIDR ranges) whose `Forwarded` (RFC 7239) or `X-Forwarded-For` header
//! is believed. From any other peer both headers are ignored: a client
//! cannot choose the address it is audited and rate-limited under.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;

/// An address or a CIDR range (`10.0.0.0/8`, `::1`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    addr: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Parses `ADDR` or `ADDR/PREFIX`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bad = || format!("`{text}` is not an IP address or CIDR range (e.g. 10.0.0.0/8)");
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix.parse::<u8>().map_err(|_| bad())?)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(Self { addr, prefix })
    }

    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as
    /// its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The addresses a request passed through, nearest last: `Forwarded`'s
/// `for=` values if present, else `X-Forwarded-For`'s. Entries that are not
/// plain addresses (`unknown`, obfuscated names) come back as `None`.
fn forwarded_chain(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let forwarded: Vec<Option<IpAddr>> = headers
        .get_all("forwarded")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (key, value) = pair.trim().split_once('=')?;
                key.eq_ignore_ascii_case("for")
                    .then(|| parse_node(value.trim().trim_matches('"')))
            })
        })
        .collect();
    if !forwarded.is_empty() {
        return forwarded;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|node| parse_node(node.trim()))
        .collect()
}

/// `1.2.3.4`, `1.2.3.4:5678`, `[::1]`, `[::1]:5678` or `::1`.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(socket) = node.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    node.strip_prefix('[')?.split(']').next()?.parse().ok()
}

/// The client's address: from the peer on, the nearest address that is
/// not a trusted proxy. A peer that is not trusted is the client itself.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpRange]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|range| range.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let mut client = peer;
    for hop in forwarded_chain(headers).into_iter().rev() {
        match hop {
            Some(ip) => {
                client = ip;
                if !is_trusted(ip) {
                    break;
                }
            }
            // An entry we cannot read: stop at the last address we trust.
            None => break,
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_parse_and_match() {
        let net = IpRange::parse("10.0.0.0/8").unwrap();
        assert!(net.contains(ip("10.200.1.2")));
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(IpRange::parse("::1").unwrap().contains(ip("::1")));
        assert!(
            IpRange::parse("127.0.0.1")
                .unwrap()
                .contains(ip("::ffff:127.0.0.1"))
        );
        assert!(IpRange::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        for bad in ["10.0.0.0/33", "example.com", "10.0.0.0/x", ""] {
            assert!(IpRange::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_a_trusted_peer_is_believed() {
        let trusted = [IpRange::parse("10.0.0.1").unwrap()];
        let h = headers(&[("x-forwarded-for", "203.0.113.7")]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("203.0.113.7"));
        assert_eq!(client_ip(ip("10.0.0.2"), &h, &trusted), ip("10.0.0.2"));
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &[]), ip("10.0.0.1"));
    }

    #[test]
    fn a_spoofed_head_of_the_chain_is_not_taken() {
        // The client wrote the first entry itself; the proxy appended the
        // address it saw.
        let trusted = [IpRange::parse("10.0.0.0/8").unwrap()];
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 198.51.100.9, 10.0.0.3")]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("198.51.100.9"));
    }

    #[test]
    fn forwarded_wins_over_x_forwarded_for() {
        let trusted = [IpRange::parse("127.0.0.1").unwrap()];
        let h = headers(&[
            ("forwarded", "for=\"[2001:db8::7]:4711\";proto=https"),
            ("x-forwarded-for", "192.0.2.1"),
        ]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &trusted), ip("2001:db8::7"));
        let h = headers(&[("forwarded", "for=unknown")]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &trusted), ip("127.0.0.1"));
    }
}
