//! `merchant-admin healthcheck`: the container image's HEALTHCHECK. A `FROM scratch` image
//! has no shell or curl, so the binary probes itself: GET `/readyz` over loopback HTTP, exit
//! status 0 only on 200. Plain HTTP, no proxy: the server speaks no TLS and is local.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use crate::cli::HealthcheckArgs;

/// Longest answer read: `/readyz` answers a few hundred bytes.
const KEEP: u64 = 8 * 1024;

/// Where to probe: `serve --addr 0.0.0.0:8080` listens on every interface, loopback among them.
fn probe_addr(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, addr.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, addr.port()).into(),
        _ => addr,
    }
}

pub fn healthcheck(args: &HealthcheckArgs) -> anyhow::Result<()> {
    let url = format!("http://{}/readyz", probe_addr(args.addr));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(args.timeout_secs)))
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .build()
        .into();
    let mut res = agent
        .get(&url)
        .call()
        .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
    let status = res.status().as_u16();
    let mut body = Vec::new();
    // A truncated or unreadable body still has its status: that decides.
    let _ = res.body_mut().as_reader().take(KEEP).read_to_end(&mut body);
    let body = String::from_utf8_lossy(&body);
    if status == 200 {
        println!("{}", body.trim());
        Ok(())
    } else {
        anyhow::bail!("{url} answered {status}: {}", body.trim())
    }
}
