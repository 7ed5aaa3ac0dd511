//! The daemon's settings, as `serve` reads them from its flags: the
//! domain's (`widgetd_domain::Settings`), the HTTP edge's, and the
//! notifiers'. Holds no secret.

use widgetd_notify::slack::SlackSettings;
use widgetd_notify::webhooks::WebhookSettings;

use crate::forwarded::{ForwardedHeader, IpRange};

/// Everything `serve` is told.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The public URL, the prompt tag, the widget TTL, elicitation.
    pub domain: widgetd_domain::Settings,
    /// Host names every route answers to (`--mcp-allowed-hosts`, with
    /// loopback and the public URL's name). Compared without the port: a
    /// proxy's `Host: $host` drops it, and DNS rebinding is about names.
    pub mcp_allowed_hosts: Vec<String>,
    /// Reverse proxies whose forwarding header is believed
    /// (`serve --trusted-proxies`); empty: the TCP peer is the client.
    pub trusted_proxies: Vec<IpRange>,
    /// The one header those proxies set, read right to left
    /// (`serve --forwarded-header`); the other is ignored.
    pub forwarded_header: ForwardedHeader,
    /// Where webhooks may go and how they are retried.
    pub webhooks: WebhookSettings,
    /// Where Slack is reached.
    pub slack: SlackSettings,
}

impl Settings {
    /// Defaults for a daemon reached at `public_url`.
    pub fn new(public_url: impl Into<String>) -> Self {
        let domain = widgetd_domain::Settings::new(public_url);
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        if let Some(host) = domain
            .public_url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
        {
            hosts.push(host_name(host).to_owned());
        }
        Self {
            domain,
            mcp_allowed_hosts: hosts,
            trusted_proxies: Vec::new(),
            forwarded_header: ForwardedHeader::default(),
            webhooks: WebhookSettings::default(),
            slack: SlackSettings::default(),
        }
    }

    /// The same settings with the allowed hosts as names only, lower case,
    /// also for rmcp's own check of `/mcp` (an entry without a port matches
    /// any port there too), so both checks agree.
    pub(crate) fn normalized(mut self) -> Self {
        for entry in &mut self.mcp_allowed_hosts {
            *entry = host_name(entry.trim()).to_ascii_lowercase();
        }
        self
    }
}

/// The name of `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6
/// address.
pub(crate) fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match host.rsplit_once(':') {
        // More than one colon and no brackets: a bare IPv6 address.
        Some((name, _)) if !name.contains(':') => name,
        _ => host,
    }
}
