//! A readable device label from a User-Agent, for sessions created without `device_name`.

/// "Firefox on Windows", "Safari on iPhone", "curl", or "Unknown device".
pub fn name_from_user_agent(ua: Option<&str>) -> String {
    let Some(ua) = ua.map(str::trim).filter(|u| !u.is_empty()) else {
        return "Unknown device".into();
    };
    let os = [
        ("iPhone", "iPhone"),
        ("iPad", "iPad"),
        ("Android", "Android"),
        ("Windows", "Windows"),
        ("Mac OS X", "macOS"),
        ("Macintosh", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ]
    .into_iter()
    .find(|(needle, _)| ua.contains(needle))
    .map(|(_, name)| name);
    // Order matters: Edge and Opera say Chrome, Chrome says Safari.
    let browser = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ]
    .into_iter()
    .find(|(needle, _)| ua.contains(needle))
    .map(|(_, name)| name);
    match (browser, os) {
        (Some(b), Some(o)) => format!("{b} on {o}"),
        (Some(b), None) => b.to_owned(),
        (None, Some(o)) => o.to_owned(),
        // Scripts and tools: their product token ("curl/8.5.0" → "curl").
        (None, None) => ua
            .split(['/', ' '])
            .next()
            .unwrap_or("Unknown device")
            .chars()
            .take(60)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::name_from_user_agent as name;

    #[test]
    fn common_user_agents_get_readable_names() {
        let mac_chrome = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";
        assert_eq!(name(Some(mac_chrome)), "Chrome on macOS");
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
        assert_eq!(name(Some(iphone)), "Safari on iPhone");
        assert_eq!(
            name(Some(
                "Mozilla/5.0 (Windows NT 10.0; rv:121.0) Gecko/20100101 Firefox/121.0"
            )),
            "Firefox on Windows"
        );
        assert_eq!(name(Some("curl/8.5.0")), "curl");
        assert_eq!(name(None), "Unknown device");
    }
}
