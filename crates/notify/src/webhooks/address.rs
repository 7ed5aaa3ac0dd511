//! Where notices may go: never to the daemon's own machine or network
//! unless the operator allows it (`serve --webhooks-allow-private`).
//!
//! A member chooses the URL, and the daemon sends from inside its network:
//! without this, a webhook could reach `127.0.0.1`, a cloud metadata
//! address or an intranet service. An address is checked when the endpoint
//! is added (literal IPs, and the addresses a name resolves to then) and at
//! every delivery: the name is resolved once, every address checked, and
//! the connection made to those checked addresses ([`GuardedResolver`] is
//! the HTTP client's only resolver), so a DNS answer cannot change between
//! the check and the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use widgetd_domain::error::{Error, Result};

/// How long adding an endpoint waits for its name to resolve.
const RESOLVE_AT_CREATION: Duration = Duration::from_secs(3);

/// Whether notices may go to `ip` when private addresses are not allowed:
/// not loopback, unspecified, link-local, private, unique-local, shared
/// (CGNAT), multicast, broadcast or reserved; an IPv6 address that embeds
/// an IPv4 one (mapped, compatible, NAT64, 6to4) as that IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || a == 0
        // Shared address space (RFC 6598), the CGNAT range.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments (RFC 6890), benchmarking (RFC 2544).
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        // Reserved for future use (RFC 1112).
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Link-local fe80::/10, site-local fec0::/10, unique-local fc00::/7.
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || (first & 0xfe00) == 0xfc00)
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), -compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0, 0, ..] => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(tail),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// Whether a name is loopback by name alone: `localhost` and every name
/// under it (RFC 6761), with or without the final dot, whatever a resolver
/// says now. (At delivery the resolver's answer is what is checked: a name
/// that does not resolve is not sent to either.)
fn is_localhost(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// The refusal of an address, said the same way at creation and delivery.
pub fn refused() -> Error {
    Error::invalid(
        "webhook_address_refused",
        "this address is on the daemon's own machine or a private network (loopback, \
         link-local, private or reserved); notices are not sent there unless the operator \
         starts the daemon with --webhooks-allow-private",
    )
}

/// The host of an http(s) URL (brackets of an IPv6 literal removed) and
/// its port.
pub fn host_and_port(url: &str) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(url).ok()?;
    let port = url.port_or_known_default()?;
    let host = url.host_str()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some((host.to_owned(), port))
}

/// Checks a new endpoint's address: a literal IP at once, a name by what it
/// resolves to now (a name that does not resolve yet is let through: the
/// check is made again at every delivery).
pub async fn check_destination(url: &str, allow_private: bool) -> Result<()> {
    if allow_private {
        return Ok(());
    }
    let Some((host, port)) = host_and_port(url) else {
        return Err(Error::invalid(
            "invalid_url",
            "give an http:// or https:// URL of at most 2000 characters, without a user or password",
        ));
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return if is_public(ip) {
            Ok(())
        } else {
            Err(refused())
        };
    }
    if is_localhost(&host) {
        return Err(refused());
    }
    let lookup = tokio::net::lookup_host((host.as_str(), port));
    match tokio::time::timeout(RESOLVE_AT_CREATION, lookup).await {
        Ok(Ok(addrs)) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            match addrs.iter().all(|a| is_public(a.ip())) {
                true => Ok(()),
                false => Err(refused()),
            }
        }
        _ => Ok(()),
    }
}

/// The delivery client's resolver: resolves a name once and hands the HTTP
/// client exactly the addresses it checked, refusing the name if any of
/// them is not public (unless private addresses are allowed).
pub struct GuardedResolver {
    pub allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private && addrs.iter().any(|a| !is_public(a.ip())) {
                return Err(Box::new(Refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// A resolved address was not public: the delivery is refused.
#[derive(Debug)]
pub struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the address is not public")
    }
}

impl std::error::Error for Refused {}

/// Whether a failed request was refused by [`GuardedResolver`].
pub fn is_refusal(err: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.is::<Refused>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The resolver, shared by the delivery client.
pub fn resolver(allow_private: bool) -> Arc<GuardedResolver> {
    Arc::new(GuardedResolver { allow_private })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_ranges_are_refused_in_both_families() {
        for refused in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
        ] {
            assert!(!is_public(refused.parse().unwrap()), "{refused}");
        }
        for public in [
            "1.1.1.1",
            "93.184.216.34",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn other_spellings_of_a_private_address_are_refused_at_creation() {
        for url in [
            "http://127.1/hook",
            "http://2130706433/hook",
            "http://0x7f.0.0.1/hook",
            "http://[::ffff:7f00:1]/hook",
            "http://[0:0:0:0:0:ffff:169.254.169.254]/",
            "https://localhost./hook",
            "http://api.LOCALHOST:8080/hook",
        ] {
            match check_destination(url, false).await {
                Err(Error::Invalid { code, .. }) => {
                    assert_eq!(code, "webhook_address_refused", "{url}")
                }
                other => panic!("{url}: {other:?}"),
            }
            assert!(check_destination(url, true).await.is_ok(), "{url}");
        }
        assert!(
            check_destination("http://192.0.2.1:9/x", false)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_of_a_loopback_address() {
        let guarded = GuardedResolver {
            allow_private: false,
        };
        let name: Name = "localhost".parse().unwrap();
        let err = match guarded.resolve(name).await {
            Ok(_) => panic!("localhost was resolved"),
            Err(err) => err,
        };
        assert!(err.is::<Refused>(), "{err}");
        let open = GuardedResolver {
            allow_private: true,
        };
        let name: Name = "localhost".parse().unwrap();
        assert!(open.resolve(name).await.is_ok());
    }
}
