//! Where a webhook may point: an absolute http(s) URL whose host does not resolve to
//! loopback, private, link-local, metadata or other non-public addresses (SSRF guard). The
//! check runs when the URL is saved and again inside the delivery's own name resolution, so
//! a DNS answer that changes in between cannot slip past it (an answer that passed is used
//! again for a few seconds, never one that did not).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

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

/// How long a checked DNS answer is used again. ureq resolves before every request (a pooled
/// connection included), and with a timeout set it resolves on a thread of its own: a thread
/// per delivery. Only answers that passed the guard are kept, so a delivery still connects
/// only where the guard allowed; a name that moves is followed within this time.
const RESOLVED_FOR: Duration = Duration::from_secs(10);

/// Most answers kept; past it, those older than half of [`RESOLVED_FOR`] are forgotten, or
/// all of them (hosts are chosen by webhook owners: the map must not grow with them).
const RESOLVED_MAX: usize = 1024;

/// ureq's resolver with the guard: the addresses a delivery connects to are the ones checked.
#[derive(Debug, Default)]
pub struct GuardedResolver {
    inner: DefaultResolver,
    pub allow_private: bool,
    /// Checked answers by URI authority: (https, when resolved, addresses).
    resolved: Mutex<HashMap<String, (bool, Instant, ResolvedSocketAddrs)>>,
}

impl GuardedResolver {
    pub fn new(allow_private: bool) -> Self {
        Self {
            inner: DefaultResolver::default(),
            allow_private,
            resolved: Mutex::default(),
        }
    }

    fn refuse(&self, addrs: &[SocketAddr], uri: &ureq::http::Uri) -> Result<(), ureq::Error> {
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
        Ok(())
    }

    /// The address a URI names literally (`http://203.0.113.9:8080/`): nothing to look up.
    fn literal(&self, uri: &ureq::http::Uri) -> Option<ResolvedSocketAddrs> {
        let host = uri.host()?;
        let ip: IpAddr = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .parse()
            .ok()?;
        let port = uri.port_u16().or_else(|| match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        })?;
        let mut addrs = self.empty();
        addrs.push(SocketAddr::new(ip, port));
        Some(addrs)
    }
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if let Some(addrs) = self.literal(uri) {
            self.refuse(&addrs, uri)?;
            return Ok(addrs);
        }
        let key = uri.authority().map(ureq::http::uri::Authority::as_str);
        let https = uri.scheme_str() == Some("https");
        let now = Instant::now();
        let lock = || self.resolved.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = key
            && let Some((was_https, at, addrs)) = lock().get(key)
            && *was_https == https
            && now.duration_since(*at) < RESOLVED_FOR
        {
            return Ok(addrs.clone());
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        self.refuse(&addrs, uri)?;
        if let Some(key) = key {
            let mut kept = lock();
            if kept.len() >= RESOLVED_MAX {
                kept.retain(|_, (_, at, _)| now.duration_since(*at) < RESOLVED_FOR / 2);
                if kept.len() >= RESOLVED_MAX {
                    kept.clear();
                }
            }
            kept.insert(key.to_owned(), (https, now, addrs.clone()));
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

    fn timeout() -> NextTimeout {
        NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from_secs(5),
            reason: ureq::Timeout::Resolve,
            per_read: None,
            per_write: None,
        }
    }

    /// An address written in the URL is checked as it is, with no lookup; a name is looked
    /// up, and only an answer the guard let through is kept for the next delivery.
    #[test]
    fn the_guard_checks_every_answer_and_keeps_only_those_it_allowed() {
        let config = ureq::Agent::config_builder().build();
        let guarded = GuardedResolver::new(false);
        let open = GuardedResolver::new(true);
        for (url, addr) in [
            ("http://127.0.0.1:9/hook", "127.0.0.1:9"),
            ("https://[::1]/hook", "[::1]:443"),
            ("http://10.0.0.7/", "10.0.0.7:80"),
        ] {
            let uri: ureq::http::Uri = url.parse().unwrap();
            let e = guarded.resolve(&uri, &config, timeout()).unwrap_err();
            assert!(e.to_string().contains("refused"), "{url}: {e}");
            let addrs = open.resolve(&uri, &config, timeout()).unwrap();
            assert_eq!(&addrs[..], &[addr.parse::<SocketAddr>().unwrap()], "{url}");
        }
        let public: ureq::http::Uri = "https://93.184.215.14/hook".parse().unwrap();
        let addrs = guarded.resolve(&public, &config, timeout()).unwrap();
        assert_eq!(
            &addrs[..],
            &["93.184.215.14:443".parse::<SocketAddr>().unwrap()]
        );
        assert!(
            guarded.resolved.lock().unwrap().is_empty(),
            "literals need no lookup"
        );

        let name: ureq::http::Uri = "http://localhost:9/hook".parse().unwrap();
        let e = guarded.resolve(&name, &config, timeout()).unwrap_err();
        assert!(e.to_string().contains("refused: localhost"), "{e}");
        assert!(
            guarded.resolved.lock().unwrap().is_empty(),
            "a refused answer is not kept"
        );
        assert!(open.resolve(&name, &config, timeout()).is_ok());
        assert!(open.resolved.lock().unwrap().contains_key("localhost:9"));
        assert!(
            guarded.resolve(&name, &config, timeout()).is_err(),
            "each resolver keeps its own answers"
        );
    }
}
