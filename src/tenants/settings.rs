//! Validation of a store's settings (`PATCH /stores/{id}`; issue 17): payment methods,
//! shipping zones and the custom domain. Each problem is a 422 naming the field, found
//! before anything is written.

use super::model::{PaymentMethod, ShippingZone, ShippingZoneIn};
use crate::error::AppError;
use crate::http::extract::text;

/// At most this many shipping zones per store.
pub const MAX_ZONES: usize = 50;

/// The 27 federative units of Brazil (26 states and the Federal District).
pub const UF_CODES: [&str; 27] = [
    "AC", "AL", "AP", "AM", "BA", "CE", "DF", "ES", "GO", "MA", "MT", "MS", "MG", "PA", "PB", "PR",
    "PE", "PI", "RJ", "RN", "RS", "RO", "RR", "SC", "SP", "SE", "TO",
];

/// A null where only an array is allowed: `[]` is how a setting is cleared.
pub fn not_null<T>(field: &str, v: Option<T>) -> Result<T, AppError> {
    v.ok_or_else(|| AppError::field(field, "must be an array; send [] to clear it"))
}

/// The methods without duplicates, in the order first given.
pub fn payment_methods(list: Vec<PaymentMethod>) -> Vec<PaymentMethod> {
    let mut out = Vec::with_capacity(list.len());
    for m in list {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// Checks every zone; states are uppercased and deduplicated, names trimmed.
pub fn shipping_zones(list: Vec<ShippingZoneIn>) -> Result<Vec<ShippingZone>, AppError> {
    if list.len() > MAX_ZONES {
        return Err(AppError::field(
            "shipping_zones",
            format!("at most {MAX_ZONES} zones"),
        ));
    }
    let mut out: Vec<ShippingZone> = Vec::with_capacity(list.len());
    for (i, z) in list.into_iter().enumerate() {
        let at = |f: &str| format!("shipping_zones[{i}].{f}");
        let name = text(&at("name"), &z.name, 1, 80)?;
        if out
            .iter()
            .any(|o| o.name.to_lowercase() == name.to_lowercase())
        {
            return Err(AppError::field(
                at("name"),
                format!("another zone is already named {name:?}"),
            ));
        }
        if z.regions.is_empty() {
            return Err(AppError::field(
                at("regions"),
                "needs at least one state code such as SP",
            ));
        }
        let mut regions: Vec<String> = Vec::with_capacity(z.regions.len());
        for r in &z.regions {
            let code = r.trim().to_ascii_uppercase();
            if !UF_CODES.contains(&code.as_str()) {
                return Err(AppError::field(
                    at("regions"),
                    format!("{r:?} is not a Brazilian state code (UF) such as SP or RJ"),
                ));
            }
            // A state priced by two zones would have two freight prices.
            if let Some(other) = out.iter().find(|o| o.regions.contains(&code)) {
                return Err(AppError::field(
                    at("regions"),
                    format!("{code} is already in zone {:?}", other.name),
                ));
            }
            if !regions.contains(&code) {
                regions.push(code);
            }
        }
        if z.price_cents < 0 {
            return Err(AppError::field(at("price_cents"), "must be 0 or more"));
        }
        if z.free_over_cents.is_some_and(|c| c < 0) {
            return Err(AppError::field(at("free_over_cents"), "must be 0 or more"));
        }
        out.push(ShippingZone {
            name,
            regions,
            price_cents: z.price_cents,
            free_over_cents: z.free_over_cents,
        });
    }
    Ok(out)
}

/// A host name the store can be reached at: lowercase letters, digits and hyphens in dot-
/// separated labels of 1 to 63 characters, at least two labels, at most 253 characters, no
/// scheme, port, path or trailing dot, and not an IP address.
pub fn custom_domain(v: &str) -> Result<String, AppError> {
    let bad = |why: &str| {
        AppError::field(
            "custom_domain",
            format!("{why}: send a host name such as shop.example.com.br"),
        )
    };
    let d = v.trim();
    if d.is_empty() || d.len() > 253 {
        return Err(bad("must be 1 to 253 characters"));
    }
    if d.contains("://") || d.contains(['/', ':', '?', '#', '@']) {
        return Err(bad("must be only the host, without scheme, port or path"));
    }
    if d.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(bad("must be lowercase"));
    }
    let labels: Vec<&str> = d.split('.').collect();
    if labels.len() < 2 {
        return Err(bad("needs at least one dot"));
    }
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !labels.iter().all(label_ok) {
        return Err(bad(
            "each part must be 1 to 63 letters, digits or inner hyphens",
        ));
    }
    // 10.0.0.1 is an address, not a name: a top-level domain is never all digits.
    if labels
        .last()
        .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(bad("must be a name, not an IP address"));
    }
    Ok(d.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains() {
        for ok in [
            "shop.example.com",
            "loja-da-ana.com.br",
            "xn--lj-8ja.com.br",
            "a.b",
        ] {
            assert_eq!(custom_domain(ok).unwrap(), ok);
        }
        for bad in [
            "",
            "localhost",
            "Shop.example.com",
            "https://shop.example.com",
            "shop.example.com:8443",
            "shop.example.com/path",
            "shop.example.com.",
            "-shop.example.com",
            "shop..example.com",
            "shop_1.example.com",
            "10.0.0.1",
            "lojá.com.br",
        ] {
            assert!(custom_domain(bad).is_err(), "{bad:?} accepted");
        }
        let long = format!("{}.com", "a.".repeat(125));
        assert!(long.len() > 253 && custom_domain(&long).is_err());
    }

    #[test]
    fn payment_methods_keep_their_first_order() {
        use PaymentMethod::{Boleto, Pix};
        assert_eq!(payment_methods(vec![Pix, Boleto, Pix]), vec![Pix, Boleto]);
    }
}
