//! The client address behind a trusted reverse proxy.
//!
//! A request's address is its TCP peer, as recorded in the audit log and
//! used by the login rate limits. Behind a proxy that peer is the proxy
//! for everyone, so `serve --trusted-proxies` names the proxies (addresses
//! or CIDR ranges) whose forwarding header is believed, and
//! `serve --forwarded-header` names that header: `X-Forwarded-For` (the
//! default) or `Forwarded` (RFC 7239), never both. The other one is
//! ignored entirely: a proxy sets or appends to the header it knows and
//! passes the other through as the client wrote it. The chain is read
//! from its right end (the hop the nearest proxy saw) and the first
//! address that is not a trusted proxy is the client; what a client wrote
//! further left is never reached. From a peer that is not trusted both
//! headers are ignored: a client cannot choose the address it is audited
//! and rate-limited under.

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

/// The one header the client's address is read from behind a trusted
/// proxy (`serve --forwarded-header`); the other is ignored entirely, so a
/// client cannot add a header the proxy does not set or clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For`: what nginx, Caddy, Traefik, HAProxy and cloud
    /// load balancers set.
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239), its `for=` values: for a proxy that sets it
    /// and replaces (or appends to) the client's.
    Forwarded,
}

impl ForwardedHeader {
    /// The addresses a request passed through, nearest last, from this
    /// header only. Entries that are not plain addresses (`unknown`,
    /// obfuscated names, a `Forwarded` element without `for=`) come back as
    /// `None`.
    fn chain(self, headers: &HeaderMap) -> Vec<Option<IpAddr>> {
        let name = match self {
            Self::XForwardedFor => "x-forwarded-for",
            Self::Forwarded => "forwarded",
        };
        let elements = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','));
        match self {
            Self::XForwardedFor => elements.map(|node| parse_node(node.trim())).collect(),
            Self::Forwarded => elements.map(forwarded_for).collect(),
        }
    }
}

/// The `for=` node of one `Forwarded` element, if it is an address.
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("for")
            .then(|| parse_node(value.trim().trim_matches('"')))?
    })
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

/// The client's address: from the peer on, right to left through
/// `header`'s hops, the first address that is not a trusted proxy. A peer
/// that is not trusted is the client itself; an entry that cannot be read
/// stops the walk at the last trusted address.
pub fn client_ip(
    peer: IpAddr,
    headers: &HeaderMap,
    header: ForwardedHeader,
    trusted: &[IpRange],
) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|range| range.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let mut client = peer;
    for hop in header.chain(headers).into_iter().rev() {
        let Some(ip) = hop else { break };
        client = ip;
        if !is_trusted(ip) {
            break;
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

    const XFF: ForwardedHeader = ForwardedHeader::XForwardedFor;
    const FORWARDED: ForwardedHeader = ForwardedHeader::Forwarded;

    #[test]
    fn ipv6_ranges_contain_their_addresses_only() {
        let doc = IpRange::parse("2001:db8::/32").unwrap();
        assert!(doc.contains(ip("2001:db8::1")));
        assert!(doc.contains(ip("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")));
        assert!(!doc.contains(ip("2001:db9::1")));
        assert!(!doc.contains(ip("2001:db7:ffff::1")));
        assert!(!doc.contains(ip("::1")));
        let one = IpRange::parse("::1").unwrap();
        assert!(one.contains(ip("::1")));
        assert!(!one.contains(ip("::2")));
        assert!(!one.contains(ip("::")));
        let all = IpRange::parse("::/0").unwrap();
        for inside in ["::", "::1", "2001:db8::1", "fe80::1", "ffff:ffff::"] {
            assert!(all.contains(ip(inside)), "{inside}");
        }
        let link_local = IpRange::parse("fe80::/10").unwrap();
        assert!(link_local.contains(ip("fe80::1")));
        assert!(link_local.contains(ip("febf:ffff::1")));
        assert!(!link_local.contains(ip("fec0::1")));
        assert!(!link_local.contains(ip("fe7f::1")));
        // A range of one family never holds the other's addresses.
        assert!(!all.contains(ip("10.0.0.1")));
        assert!(!IpRange::parse("0.0.0.0/0").unwrap().contains(ip("::1")));
        assert!(IpRange::parse("::/129").is_err());
    }

    #[test]
    fn only_a_trusted_peer_is_believed() {
        let trusted = [IpRange::parse("10.0.0.1").unwrap()];
        let h = headers(&[("x-forwarded-for", "203.0.113.7")]);
        assert_eq!(
            client_ip(ip("10.0.0.1"), &h, XFF, &trusted),
            ip("203.0.113.7")
        );
        assert_eq!(client_ip(ip("10.0.0.2"), &h, XFF, &trusted), ip("10.0.0.2"));
        assert_eq!(client_ip(ip("10.0.0.1"), &h, XFF, &[]), ip("10.0.0.1"));
    }

    #[test]
    fn a_spoofed_head_of_the_chain_is_not_taken() {
        // The client wrote the first entry itself; the proxy appended the
        // address it saw.
        let trusted = [IpRange::parse("10.0.0.0/8").unwrap()];
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 198.51.100.9, 10.0.0.3")]);
        assert_eq!(
            client_ip(ip("10.0.0.1"), &h, XFF, &trusted),
            ip("198.51.100.9")
        );
        // The same over several header lines, read as one list in order.
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "198.51.100.9, 10.0.0.3"),
        ]);
        assert_eq!(
            client_ip(ip("10.0.0.1"), &h, XFF, &trusted),
            ip("198.51.100.9")
        );
    }

    #[test]
    fn an_ipv6_chain_stops_at_the_first_untrusted_hop() {
        let trusted = [IpRange::parse("::1").unwrap()];
        let h = headers(&[("x-forwarded-for", "2001:db8::9, ::2")]);
        assert_eq!(client_ip(ip("::1"), &h, XFF, &trusted), ip("::2"));
        let trusted = [IpRange::parse("fd00::/8").unwrap()];
        let h = headers(&[("x-forwarded-for", "2001:db8::9, fd00::7")]);
        assert_eq!(
            client_ip(ip("fd00::1"), &h, XFF, &trusted),
            ip("2001:db8::9")
        );
    }

    #[test]
    fn forwarded_is_ignored_when_x_forwarded_for_is_read() {
        let trusted = [IpRange::parse("127.0.0.1").unwrap()];
        let h = headers(&[
            ("forwarded", "for=192.0.2.66"),
            ("x-forwarded-for", "198.51.100.3"),
        ]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, XFF, &trusted),
            ip("198.51.100.3")
        );
        // Only a `Forwarded` the client wrote: the proxy is the client.
        let h = headers(&[("forwarded", "for=192.0.2.66")]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, XFF, &trusted),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn x_forwarded_for_is_ignored_when_forwarded_is_read() {
        let trusted = [IpRange::parse("127.0.0.1").unwrap()];
        let h = headers(&[
            ("forwarded", "for=\"[2001:db8::7]:4711\";proto=https"),
            ("x-forwarded-for", "192.0.2.1"),
        ]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, FORWARDED, &trusted),
            ip("2001:db8::7")
        );
        let h = headers(&[("x-forwarded-for", "192.0.2.1")]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, FORWARDED, &trusted),
            ip("127.0.0.1")
        );
        // Right to left: the client's own element on the left is not reached.
        let h = headers(&[("forwarded", "for=192.0.2.66, For=\"198.51.100.4:80\"")]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, FORWARDED, &trusted),
            ip("198.51.100.4")
        );
    }

    #[test]
    fn an_unreadable_hop_stops_at_the_last_trusted_address() {
        let trusted = [IpRange::parse("10.0.0.0/8").unwrap()];
        for (header, value, kind) in [
            ("forwarded", "for=unknown", FORWARDED),
            ("forwarded", "for=192.0.2.1, proto=https", FORWARDED),
            ("forwarded", "for=192.0.2.1, for=_hidden", FORWARDED),
            ("x-forwarded-for", "192.0.2.1, unknown", XFF),
            ("x-forwarded-for", "192.0.2.1, 10.0.0.9, garbage", XFF),
        ] {
            let h = headers(&[(header, value)]);
            assert_eq!(
                client_ip(ip("10.0.0.1"), &h, kind, &trusted),
                ip("10.0.0.1"),
                "{value}"
            );
        }
    }

    #[test]
    fn nodes_parse_with_ports_and_brackets() {
        for (node, want) in [
            ("192.0.2.1", "192.0.2.1"),
            ("192.0.2.1:8080", "192.0.2.1"),
            ("[2001:db8::1]", "2001:db8::1"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("2001:db8::1", "2001:db8::1"),
        ] {
            assert_eq!(parse_node(node), Some(ip(want)), "{node}");
        }
        assert_eq!(parse_node("unknown"), None);
    }
}
