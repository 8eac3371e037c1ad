//! JSON number rules shared by the body extractor and the areas that keep part of a body as
//! raw JSON and read it later (a workflow's node configs and trigger). A leaf utility: it
//! names no other module of the crate.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Each whole number in `v` written as a float (`2.0`, `1e3`) made an integer; false when
/// there was none. Past 2^53 a float no longer names one integer, so it is left alone.
pub fn whole_numbers_as_integers(v: &mut Value) -> bool {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 => {
                // In range and whole, so the cast is exact.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *v = Value::from(i);
                true
            }
            _ => false,
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, x| whole_numbers_as_integers(x) | any),
        Value::Object(fields) => fields
            .values_mut()
            .fold(false, |any, x| whole_numbers_as_integers(x) | any),
        _ => false,
    }
}

/// `v` as a `T`, reading a whole number written with a fraction as the integer it means
/// when that is what stood in the way (JSON Schema's `integer` admits `2.0`). Any other
/// refusal is the first attempt's, with its path.
pub fn from_value<T: DeserializeOwned>(
    v: &Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize(v).or_else(|e| retry_whole(v, e).map(|(t, _)| t))
}

/// As [`from_value`], and `v` becomes what was read: kept raw and stored, it then holds the
/// integers its schema promises to whoever reads it next (a client, an older binary).
pub fn from_value_mut<T: DeserializeOwned>(
    v: &mut Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    match serde_path_to_error::deserialize(&*v) {
        Ok(t) => Ok(t),
        Err(e) => {
            let (t, whole) = retry_whole(v, e)?;
            *v = whole;
            Ok(t)
        }
    }
}

fn retry_whole<T: DeserializeOwned>(
    v: &Value,
    e: serde_path_to_error::Error<serde_json::Error>,
) -> Result<(T, Value), serde_path_to_error::Error<serde_json::Error>> {
    let mut whole = v.clone();
    if whole_numbers_as_integers(&mut whole)
        && let Ok(t) = serde_path_to_error::deserialize(&whole)
    {
        return Ok((t, whole));
    }
    Err(e)
}
