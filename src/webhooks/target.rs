//! Where a webhook may point: an absolute http(s) URL whose host does not resolve to
//! loopback, private, link-local, metadata or other non-public addresses (SSRF guard). The
//! check runs when the URL is saved and again inside the delivery's own name resolution, so
//! a DNS answer that changes in between cannot slip past it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Longest URL we keep.
const MAX_URL: usize = 2048;

/// Parses and checks the shape of a webhook URL (not where it points).
pub fn parse_url(raw: &str) -> Result<url::Url, String> {
    if raw.len() > MAX_URL {
        return Err(format!("must be at most {MAX_URL} characters"));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("must be an absolute URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must use http or https".into());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("must name a host".into());
    }
    Ok(url)
}

/// True for addresses a webhook must not reach unless private targets are allowed.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            let seg = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7 (incl. fd00:ec2::254)
                || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (seg[0] & 0xffc0) == 0xfec0 // deprecated site-local
                // NAT64 (64:ff9b::/96) and IPv4-compatible forms carry an IPv4 address
                || (seg[0..6] == [0x64, 0xff9b, 0, 0, 0, 0]
                    && forbidden_v4(embedded_v4(v6)))
                || (seg[0..6] == [0, 0, 0, 0, 0, 0] && forbidden_v4(embedded_v4(v6)))
                || (seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1) // local NAT64 64:ff9b:1::/48
                // 6to4 (2002::/16) carries an IPv4 address in its next 32 bits
                || (seg[0] == 0x2002 && forbidden_v4(Ipv4Addr::new(
                    (seg[1] >> 8) as u8, (seg[1] & 0xff) as u8, (seg[2] >> 8) as u8, (seg[2] & 0xff) as u8)))
                || (seg[0] == 0x2001 && seg[1] == 0) // Teredo: tunnels to anywhere
                || seg[0] == 0x2001 && seg[1] == 0x0db8 // documentation
        }
    }
}

fn embedded_v4(v6: Ipv6Addr) -> Ipv4Addr {
    let o = v6.octets();
    Ipv4Addr::new(o[12], o[13], o[14], o[15])
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // 169.254/16, cloud metadata 169.254.169.254
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (b & 0xc0) == 64) // shared address space 100.64/10 (100.100.100.200)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b & 0xfe) == 18) // benchmarking 198.18/15
        || a >= 240 // reserved
}

/// Resolves the URL's host and refuses it when any address is forbidden. A host that does
/// not resolve is accepted here (its DNS may not exist yet); delivery checks again. Blocking.
pub fn check_destination(url: &url::Url) -> Result<(), String> {
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(ip.into(), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(ip.into(), port)],
        _ => (host, port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .unwrap_or_default(),
    };
    // The message names the host, never the address: a caller must not be able to map
    // internal DNS through our answers.
    if addrs.iter().any(|a| is_forbidden(a.ip())) {
        Err(format!(
            "{host} is or resolves to a loopback, private, link-local or reserved address"
        ))
    } else {
        Ok(())
    }
}

/// ureq's resolver with the guard: the addresses a delivery connects to are the ones checked.
#[derive(Debug, Default)]
pub struct GuardedResolver {
    inner: DefaultResolver,
    pub allow_private: bool,
}

impl GuardedResolver {
    pub fn new(allow_private: bool) -> Self {
        Self {
            inner: DefaultResolver::default(),
            allow_private,
        }
    }
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        if !self.allow_private && addrs.iter().any(|a| is_forbidden(a.ip())) {
            // Recorded on the delivery attempt, which the store can read: no address in it.
            return Err(ureq::Error::Other(
                format!(
                    "refused: {} is or resolves to a loopback, private, link-local or reserved address",
                    uri.host().unwrap_or_default(),
                )
                .into(),
            ));
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_metadata_addresses_are_forbidden() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2001:0:4136:e378::1",
        ] {
            assert!(is_forbidden(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "93.184.215.14",
            "8.8.8.8",
            "2606:4700::1111",
            "100.128.0.1",
            "2002:5db8:d70e::1",
        ] {
            assert!(!is_forbidden(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn urls_must_be_absolute_http() {
        assert!(parse_url("https://example.com/hook").is_ok());
        assert!(parse_url("ftp://example.com/").is_err());
        assert!(parse_url("/relative").is_err());
        assert!(parse_url("http://").is_err());
    }
}
