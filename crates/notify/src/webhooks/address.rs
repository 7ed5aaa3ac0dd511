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
/// IPv4 addresses (mapped, compatible, translated, NAT64, 6to4, Teredo)
/// only if every one of them is public.
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
    let embedded = embedded_v4(ip);
    if !embedded.is_empty() {
        return embedded.into_iter().all(is_public_v4);
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

/// The IPv4 address of two 16-bit segments.
fn v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}

/// The IPv4 addresses an IPv6 address carries, each of which a packet to
/// it may reach: IPv4-mapped (`::ffff:a.b.c.d`), -compatible
/// (`::a.b.c.d`), -translated (`::ffff:0:a.b.c.d`, RFC 2765), NAT64
/// (`64:ff9b::/96`, and the local-use `64:ff9b:1::/48` of RFC 8215 with the
/// address in its last 32 bits, as a /96 taken from it carries it), 6to4
/// (`2002::/16`, bits 16 to 48) and Teredo (`2001::/32`, RFC 4380: the
/// server in bits 32 to 64, the client in the last 32 bits inverted).
/// Empty for any other address.
fn embedded_v4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = ip.segments();
    let tail = v4(s[6], s[7]);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0, 0, ..] => vec![tail],
        [0, 0, 0, 0, 0xffff, 0, ..] => vec![tail],
        [0x64, 0xff9b, 0, 0, 0, 0, ..] | [0x64, 0xff9b, 1, ..] => vec![tail],
        [0x2002, hi, lo, ..] => vec![v4(hi, lo)],
        [0x2001, 0, hi, lo, ..] => vec![v4(hi, lo), v4(!s[6], !s[7])],
        _ => Vec::new(),
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
    let lookup = |host: String, port: u16| async move {
        let lookup = tokio::net::lookup_host((host.as_str(), port));
        match tokio::time::timeout(RESOLVE_AT_CREATION, lookup).await {
            Ok(Ok(addrs)) => Some(addrs.collect()),
            _ => None,
        }
    };
    check_destination_with(url, allow_private, lookup).await
}

/// [`check_destination`] with `lookup` resolving a name (`None`: it did
/// not resolve in time).
async fn check_destination_with<F, Fut>(url: &str, allow_private: bool, lookup: F) -> Result<()>
where
    F: FnOnce(String, u16) -> Fut,
    Fut: std::future::Future<Output = Option<Vec<SocketAddr>>>,
{
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
    match lookup(host, port).await {
        Some(addrs) if !addrs.iter().all(|a| is_public(a.ip())) => Err(refused()),
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
            // IETF protocol assignments, benchmarking, site-local.
            "192.0.0.8",
            "192.0.0.255",
            "198.18.0.1",
            "198.19.255.254",
            "fec0::1",
            "feff::1",
            // IPv4-translated (::ffff:0:a.b.c.d): 127.0.0.1, 10.0.0.1.
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            // Local-use NAT64: 169.254.169.254, 192.168.1.1.
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1:abcd::c0a8:101",
            // Teredo: a public server, the client 192.168.1.1 (stored
            // inverted, which alone would read as 63.87.254.254).
            "2001:0:4136:e378:8000:63bf:3f57:fefe",
            // Teredo: the server 10.0.0.1, the client 1.1.1.1.
            "2001:0:a00:1:8000:63bf:fefe:fefe",
        ] {
            assert!(!is_public(refused.parse().unwrap()), "{refused}");
        }
        for public in [
            "1.1.1.1",
            "93.184.216.34",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "::ffff:0:101:101",
            "64:ff9b:1::101:101",
            "64:ff9b::101:101",
            // Teredo: the server 65.54.227.120, the client 1.1.1.1 (stored
            // inverted, which alone would read as reserved 254.254.254.254).
            "2001:0:4136:e378:8000:63bf:fefe:fefe",
            "2001:db8::1",
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
    async fn a_name_is_refused_at_creation_if_any_address_it_resolves_to_is_private() {
        fn answering(
            addrs: &[&str],
        ) -> impl FnOnce(String, u16) -> std::future::Ready<Option<Vec<SocketAddr>>> + use<>
        {
            let addrs: Vec<SocketAddr> = addrs
                .iter()
                .map(|a| SocketAddr::new(a.parse().unwrap(), 443))
                .collect();
            move |host, port| {
                assert_eq!((host.as_str(), port), ("hooks.example.com", 8443));
                std::future::ready(Some(addrs))
            }
        }
        let url = "https://hooks.example.com:8443/in";
        let check = |addrs: &[&str], allow| check_destination_with(url, allow, answering(addrs));
        assert!(check(&["93.184.216.34"], false).await.is_ok());
        assert!(
            check(&["93.184.216.34", "2606:4700::1111"], false)
                .await
                .is_ok()
        );
        for private in [
            &["93.184.216.34", "10.0.0.5"][..],
            &["::1"],
            &["169.254.169.254"],
        ] {
            match check(private, false).await {
                Err(Error::Invalid { code, .. }) => assert_eq!(code, "webhook_address_refused"),
                other => panic!("{private:?}: {other:?}"),
            }
            assert!(check(private, true).await.is_ok(), "{private:?}");
        }
        // Not resolved in time: let through, checked again at delivery.
        let unresolved = |_: String, _: u16| std::future::ready(None);
        assert!(check_destination_with(url, false, unresolved).await.is_ok());
    }

    #[tokio::test]
    async fn only_the_guards_refusal_counts_as_one_not_any_failure_to_connect() {
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://localhost:{port}/hook");
        let guarded = reqwest::Client::builder()
            .dns_resolver(resolver(false))
            .build()
            .unwrap();
        let err = guarded.get(&url).send().await.unwrap_err();
        assert!(is_refusal(&err), "{err}");
        let open = reqwest::Client::builder()
            .dns_resolver(resolver(true))
            .build()
            .unwrap();
        let err = open.get(&url).send().await.unwrap_err();
        assert!(err.is_connect() && !is_refusal(&err), "{err}");
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
