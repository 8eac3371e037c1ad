//! The Pix copy-and-paste code of an invoice and its QR image (issue 17). Pure: no DB, no HTTP.
//!
//! The code is a static BR Code: the EMV merchant-presented QR payload as the Banco Central do
//! Brasil profiles it (Manual do BR Code; Manual de Padrões para Iniciação do Pix). Each field
//! is `ID` (2 digits) + length (2 digits) + value, in ascending ID order:
//!
//! | ID | value                                                                   |
//! |----|-------------------------------------------------------------------------|
//! | 00 | payload format indicator, `01`                                          |
//! | 26 | merchant account information: 00 GUI `br.gov.bcb.pix`, 01 the Pix key  |
//! | 52 | merchant category code, `0000`                                          |
//! | 53 | currency, `986` (BRL)                                                   |
//! | 54 | amount, `123.45`                                                        |
//! | 58 | country, `BR`                                                           |
//! | 59 | merchant name, at most 25 characters                                    |
//! | 60 | merchant city, at most 15 characters                                    |
//! | 62 | additional data: 05 the transaction id (the invoice's)                  |
//! | 63 | CRC16-CCITT-FALSE over everything before it, `6304` included, as hex    |
//!
//! Static, so there is no field 01 (point of initiation): the payer's bank takes the amount
//! and txid from the code itself and no PSP URL is involved. Every value is ASCII, so lengths
//! in characters and in bytes agree.

use qrcodegen::{QrCode, QrCodeEcc, QrSegment, Version};

/// Who is paid: the operator's Pix key, name and city (`--pix-key`, `--pix-merchant-name`,
/// `--pix-merchant-city`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merchant {
    pub key: String,
    pub name: String,
    pub city: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PixError {
    #[error("the Pix key must be 1 to 77 printable ASCII characters without spaces")]
    InvalidKey,
    #[error("the amount must be between 1 and 99999999999 cents")]
    InvalidAmount,
    #[error("the transaction id must be 1 to 25 ASCII letters or digits")]
    InvalidTxid,
    #[error("the merchant name is empty once folded to ASCII")]
    EmptyName,
    #[error("the merchant city is empty once folded to ASCII")]
    EmptyCity,
    #[error("BR Code field {0} would be longer than 99 characters")]
    FieldTooLong(&'static str),
}

/// The Pix arrangement's globally unique identifier in field 26.
const GUI: &str = "br.gov.bcb.pix";
const MAX_KEY: usize = 77;
const MAX_NAME: usize = 25;
const MAX_CITY: usize = 15;
const MAX_TXID: usize = 25;
/// Field 54 holds at most 13 characters: "999999999.99" is 12.
const MAX_AMOUNT_CENTS: i64 = 99_999_999_999;

/// The BR Code (Pix copy-and-paste string) asking `amount_cents` for the invoice `txid`.
/// The merchant name and city are folded to ASCII and cut to 25 and 15 characters; the key
/// and the txid are taken as they are or refused.
pub fn br_code(m: &Merchant, amount_cents: i64, txid: &str) -> Result<String, PixError> {
    let key = m.key.as_str();
    // Pix keys (CPF, CNPJ, e-mail, +55 phone, random UUID) are printable ASCII with no space.
    if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(PixError::InvalidKey);
    }
    if !(1..=MAX_AMOUNT_CENTS).contains(&amount_cents) {
        return Err(PixError::InvalidAmount);
    }
    if !(1..=MAX_TXID).contains(&txid.len()) || !txid.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(PixError::InvalidTxid);
    }
    let name = fold_ascii(&m.name, MAX_NAME);
    if name.is_empty() {
        return Err(PixError::EmptyName);
    }
    let city = fold_ascii(&m.city, MAX_CITY);
    if city.is_empty() {
        return Err(PixError::EmptyCity);
    }
    let amount = format!("{}.{:02}", amount_cents / 100, amount_cents % 100);
    encode(&Fields {
        key,
        amount: Some(&amount),
        name: &name,
        city: &city,
        txid,
    })
}

/// Validated field values; `encode` only lays them out (and the manual's example, which has
/// no amount and the txid `***`, goes through it unchanged in the tests).
struct Fields<'a> {
    key: &'a str,
    amount: Option<&'a str>,
    name: &'a str,
    city: &'a str,
    txid: &'a str,
}

fn encode(f: &Fields<'_>) -> Result<String, PixError> {
    let mut account = String::new();
    tlv(&mut account, "00", GUI)?;
    tlv(&mut account, "01", f.key)?;
    let mut additional = String::new();
    tlv(&mut additional, "05", f.txid)?;

    let mut s = String::with_capacity(256);
    tlv(&mut s, "00", "01")?;
    tlv(&mut s, "26", &account)?;
    tlv(&mut s, "52", "0000")?;
    tlv(&mut s, "53", "986")?;
    if let Some(amount) = f.amount {
        tlv(&mut s, "54", amount)?;
    }
    tlv(&mut s, "58", "BR")?;
    tlv(&mut s, "59", f.name)?;
    tlv(&mut s, "60", f.city)?;
    tlv(&mut s, "62", &additional)?;
    // The CRC covers its own ID and length.
    s.push_str("6304");
    let crc = crc16_ccitt_false(s.as_bytes());
    s.push_str(&format!("{crc:04X}"));
    Ok(s)
}

/// Appends one EMV field. Two length digits: a value over 99 characters cannot be written.
fn tlv(out: &mut String, id: &'static str, value: &str) -> Result<(), PixError> {
    if value.len() > 99 {
        return Err(PixError::FieldTooLong(id));
    }
    out.push_str(id);
    out.push_str(&format!("{:02}", value.len()));
    out.push_str(value);
    Ok(())
}

/// Accents folded ("São" -> "Sao"), characters with no ASCII form dropped, whitespace runs
/// made one space, then cut to `max` characters.
fn fold_ascii(s: &str, max: usize) -> String {
    // Separators become spaces first: deunicode drops control characters, which would glue
    // "do\tZe" into one word.
    let spaced: String = s
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let ascii = deunicode::deunicode_with_tofu(&spaced, "");
    let mut out = ascii
        .split(|c: char| !c.is_ascii_graphic())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    // ASCII only, so a byte index is a character boundary.
    out.truncate(max);
    out.truncate(out.trim_end().len());
    out
}

/// CRC-16/CCITT-FALSE: polynomial 0x1021, initial 0xFFFF, no reflection, no final XOR.
fn crc16_ccitt_false(data: &[u8]) -> u16 {
    data.iter().fold(0xFFFF, |crc: u16, &b| {
        let [high, _] = crc.to_be_bytes();
        (crc << 8) ^ CRC_TABLE[usize::from(high ^ b)]
    })
}

const CRC_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i: u16 = 0;
    while i < 256 {
        let mut c = i << 8;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 0x8000 != 0 {
                (c << 1) ^ 0x1021
            } else {
                c << 1
            };
            bit += 1;
        }
        table[i as usize] = c;
        i += 1;
    }
    table
};

/// Light margin around the symbol, in modules: the 4 the QR standard asks for.
const QUIET_ZONE: i32 = 4;
/// Pixels per module. Eight makes each module exactly one byte of a 1-bit row.
const MODULE_PX: u32 = 8;

/// `payload` as a QR code (error correction level M, a 4-module quiet zone, 8 px per module)
/// in a black-and-white PNG.
///
/// # Panics
/// If `payload` does not fit a QR code (over 2,331 bytes at level M); a BR Code from
/// [`br_code`] is under 300.
pub fn qr_png(payload: &str) -> Vec<u8> {
    let qr = encode_qr(payload);
    let modules = qr.size() + 2 * QUIET_ZONE;
    let side_px = modules.unsigned_abs() * MODULE_PX;
    // Each module row is MODULE_PX identical pixel rows; in 1-bit grayscale a byte is 8
    // pixels, so one module.
    let mut pixels = Vec::with_capacity(side_px as usize * side_px as usize / 8);
    for y in -QUIET_ZONE..qr.size() + QUIET_ZONE {
        let row: Vec<u8> = (-QUIET_ZONE..qr.size() + QUIET_ZONE)
            .map(|x| if qr.get_module(x, y) { 0x00 } else { 0xFF })
            .collect();
        for _ in 0..MODULE_PX {
            pixels.extend_from_slice(&row);
        }
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, side_px, side_px);
    enc.set_color(png::ColorType::Grayscale);
    enc.set_depth(png::BitDepth::One);
    // Writing to a Vec fails only on a wrong header or data size, which these are not.
    let mut writer = enc
        .write_header()
        .expect("PNG header for an in-memory image");
    writer
        .write_image_data(&pixels)
        .expect("PNG data of the declared size");
    writer.finish().expect("PNG end into a Vec");
    out
}

/// Level M exactly (no boost), so the image is what the contract says.
fn encode_qr(payload: &str) -> QrCode {
    let segments = QrSegment::make_segments(payload);
    QrCode::encode_segments_advanced(
        &segments,
        QrCodeEcc::Medium,
        Version::MIN,
        Version::MAX,
        None,
        false,
    )
    .expect("the payload fits a QR code")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// The static example of the Manual de Padrões para Iniciação do Pix (Banco Central do
    /// Brasil), key 123e4567-e12b-12d1-a456-426655440000, no amount, txid `***`; the same
    /// string is the fixture of ACBr's TTestQRCodeEstatico (ACBrPIXCD) and of several
    /// BR Code libraries' tests.
    const MANUAL_EXAMPLE: &str = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D";

    // ---- An independent decoder, written from the EMV layout, not from `encode`. ----

    /// CRC-16/CCITT-FALSE one input bit at a time (the shift-register form), unlike the
    /// table the encoder uses.
    fn reference_crc(data: &[u8]) -> u16 {
        let mut crc: u16 = 0xFFFF;
        for &byte in data {
            for i in (0..8).rev() {
                let input = (byte >> i) & 1 == 1;
                let top = crc & 0x8000 != 0;
                crc <<= 1;
                if input != top {
                    crc ^= 0x1021;
                }
            }
        }
        crc
    }

    /// Splits an EMV TLV string into (id, value), checking IDs and lengths are two digits,
    /// every value is exactly as long as declared and IDs ascend.
    fn parse_tlvs(s: &str) -> BTreeMap<String, String> {
        let mut fields = BTreeMap::new();
        let mut rest = s;
        let mut last_id: Option<u8> = None;
        while !rest.is_empty() {
            assert!(rest.len() >= 4, "truncated field header in {s:?}: {rest:?}");
            let (id, len) = (&rest[..2], &rest[2..4]);
            assert!(
                id.bytes().chain(len.bytes()).all(|b| b.is_ascii_digit()),
                "bad header {id:?}{len:?} in {s:?}"
            );
            let id_n: u8 = id.parse().unwrap();
            assert!(
                last_id.is_none_or(|prev| prev < id_n),
                "ID {id} out of order in {s:?}"
            );
            last_id = Some(id_n);
            let len: usize = len.parse().unwrap();
            let value = rest
                .get(4..4 + len)
                .unwrap_or_else(|| panic!("field {id} runs past the end of {s:?}"));
            fields.insert(id.to_string(), value.to_string());
            rest = &rest[4 + len..];
        }
        fields
    }

    #[derive(Debug, PartialEq, Eq)]
    struct Decoded {
        key: String,
        amount_cents: Option<i64>,
        name: String,
        city: String,
        txid: String,
        point_of_initiation: Option<String>,
    }

    /// Checks field 63 is last and holds the CRC of everything before its 4 hex digits.
    fn check_crc(s: &str) -> Result<(), String> {
        if !s.is_ascii() || s.len() <= 8 {
            return Err(format!("not a BR Code: {s:?}"));
        }
        let (body, crc_hex) = s.split_at(s.len() - 4);
        if !body.ends_with("6304") {
            return Err(format!("CRC field not last in {s:?}"));
        }
        if !crc_hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
        {
            return Err(format!("CRC {crc_hex:?} is not 4 uppercase hex digits"));
        }
        let crc = u16::from_str_radix(crc_hex, 16).unwrap();
        if reference_crc(body.as_bytes()) == crc {
            Ok(())
        } else {
            Err(format!("CRC does not verify for {s:?}"))
        }
    }

    /// Verifies the CRC and the fixed fields of a Pix BR Code and returns the variable ones.
    fn decode(s: &str) -> Decoded {
        check_crc(s).unwrap();
        let top = parse_tlvs(s);
        assert_eq!(top.keys().next().map(String::as_str), Some("00"));
        assert_eq!(top["00"], "01", "payload format indicator");
        assert_eq!(top.keys().last().map(String::as_str), Some("63"));
        assert_eq!(top["52"], "0000", "merchant category code");
        assert_eq!(top["53"], "986", "currency");
        assert_eq!(top["58"], "BR", "country");

        let account = parse_tlvs(&top["26"]);
        assert!(account["00"].eq_ignore_ascii_case("br.gov.bcb.pix"), "GUI");
        let additional = parse_tlvs(&top["62"]);

        let amount_cents = top.get("54").map(|a| {
            let (units, cents) = a.split_once('.').expect("amount has a decimal point");
            assert_eq!(cents.len(), 2, "two decimals in {a:?}");
            assert!(
                units
                    .bytes()
                    .chain(cents.bytes())
                    .all(|b| b.is_ascii_digit())
            );
            units.parse::<i64>().unwrap() * 100 + cents.parse::<i64>().unwrap()
        });
        for (id, max) in [("59", 25), ("60", 15)] {
            assert!(top[id].len() <= max, "field {id} over {max}: {:?}", top[id]);
        }
        Decoded {
            key: account["01"].clone(),
            amount_cents,
            name: top["59"].clone(),
            city: top["60"].clone(),
            txid: additional["05"].clone(),
            point_of_initiation: top.get("01").cloned(),
        }
    }

    fn merchant(key: &str, name: &str, city: &str) -> Merchant {
        Merchant {
            key: key.into(),
            name: name.into(),
            city: city.into(),
        }
    }

    #[test]
    fn crc_matches_the_standard_check_value() {
        // The catalogue check value of CRC-16/CCITT-FALSE over "123456789".
        assert_eq!(reference_crc(b"123456789"), 0x29B1);
        assert_eq!(crc16_ccitt_false(b"123456789"), 0x29B1);
        assert_eq!(crc16_ccitt_false(b""), 0xFFFF);
    }

    #[test]
    fn reproduces_the_manual_example() {
        let code = encode(&Fields {
            key: "123e4567-e12b-12d1-a456-426655440000",
            amount: None,
            name: "Fulano de Tal",
            city: "BRASILIA",
            txid: "***",
        })
        .unwrap();
        assert_eq!(code, MANUAL_EXAMPLE);
        assert_eq!(
            decode(MANUAL_EXAMPLE),
            Decoded {
                key: "123e4567-e12b-12d1-a456-426655440000".into(),
                amount_cents: None,
                name: "Fulano de Tal".into(),
                city: "BRASILIA".into(),
                txid: "***".into(),
                point_of_initiation: None,
            }
        );
    }

    #[test]
    fn decoder_rejects_a_wrong_crc() {
        assert_eq!(check_crc(MANUAL_EXAMPLE), Ok(()));
        let tampered = MANUAL_EXAMPLE.replace("Fulano", "Fulana");
        assert!(
            check_crc(&tampered).is_err(),
            "a changed name must fail the CRC"
        );
        let lowercase_hex = MANUAL_EXAMPLE.replace("1D3D", "1d3d");
        assert!(check_crc(&lowercase_hex).is_err());
    }

    #[test]
    fn every_field_parses_back() {
        let cases = [
            (
                merchant("loja@example.com", "Loja Exemplo", "Recife"),
                1,
                "A1".to_string(),
            ),
            (
                merchant("+5511943214321", "Empresa", "BRASILIA"),
                6666,
                "inv0001".to_string(),
            ),
            (
                merchant("12345678000195", "Padaria", "Sao Paulo"),
                MAX_AMOUNT_CENTS,
                "Z".repeat(25),
            ),
            (
                merchant(
                    &format!("{}@example.com", "k".repeat(MAX_KEY - 12)),
                    "N",
                    "C",
                ),
                12_345,
                "0123456789abcdefABCDEF012".to_string(),
            ),
        ];
        for (m, cents, txid) in cases {
            let code = br_code(&m, cents, &txid).unwrap();
            assert_eq!(
                decode(&code),
                Decoded {
                    key: m.key.clone(),
                    amount_cents: Some(cents),
                    name: m.name.clone(),
                    city: m.city.clone(),
                    txid,
                    point_of_initiation: None,
                },
                "{code}"
            );
        }
    }

    #[test]
    fn amount_is_written_with_two_decimals() {
        let m = merchant("chave", "Loja", "Natal");
        for (cents, text) in [
            (1, "0.01"),
            (100, "1.00"),
            (12_345, "123.45"),
            (MAX_AMOUNT_CENTS, "999999999.99"),
        ] {
            let code = br_code(&m, cents, "T1").unwrap();
            assert_eq!(parse_tlvs(&code)["54"], text);
        }
    }

    #[test]
    fn name_and_city_are_folded_and_cut() {
        let m = merchant(
            "chave",
            "  Padaria São João & Filhos Ltda ",
            "São José dos Campos",
        );
        let d = decode(&br_code(&m, 100, "T1").unwrap());
        assert_eq!(d.name, "Padaria Sao Joao & Filhos");
        assert_eq!(d.city, "Sao Jose dos Ca");

        // A cut that lands on a space leaves no trailing space; tabs and newlines fold.
        let m = merchant("chave", "Açougue\tdo Zé\nConceição", "Itaú do Sul");
        let d = decode(&br_code(&m, 100, "T1").unwrap());
        assert_eq!(d.name, "Acougue do Ze Conceicao");
        assert_eq!(d.city, "Itau do Sul");
        let m = merchant("chave", "x", "Rio das Ostras Norte");
        assert_eq!(
            decode(&br_code(&m, 100, "T1").unwrap()).city,
            "Rio das Ostras"
        );
    }

    #[test]
    fn rejects_bad_txid_amount_key_name_and_city() {
        let ok = merchant("chave@example.com", "Loja", "Natal");
        for txid in ["", &"a".repeat(26), "inv-1", "inv 1", "pédido", "***"] {
            assert_eq!(
                br_code(&ok, 100, txid),
                Err(PixError::InvalidTxid),
                "{txid:?}"
            );
        }
        for cents in [0, -1, MAX_AMOUNT_CENTS + 1, i64::MIN, i64::MAX] {
            assert_eq!(br_code(&ok, cents, "T1"), Err(PixError::InvalidAmount));
        }
        for key in ["", &"k".repeat(MAX_KEY + 1), "a b", "chavé", "tab\t"] {
            let m = merchant(key, "Loja", "Natal");
            assert_eq!(br_code(&m, 100, "T1"), Err(PixError::InvalidKey), "{key:?}");
        }
        assert_eq!(
            br_code(&merchant("k", " \t\n", "Natal"), 100, "T1"),
            Err(PixError::EmptyName)
        );
        assert_eq!(
            br_code(&merchant("k", "Loja", "\u{7}"), 100, "T1"),
            Err(PixError::EmptyCity)
        );
    }

    #[test]
    fn a_field_over_99_characters_is_refused() {
        let long = "x".repeat(100);
        let mut out = String::new();
        assert_eq!(
            tlv(&mut out, "59", &long),
            Err(PixError::FieldTooLong("59"))
        );
        assert!(tlv(&mut out, "59", &long[..99]).is_ok());
        assert_eq!(&out[..4], "5999");
    }

    #[test]
    fn qr_png_is_the_code_at_8_px_per_module_with_a_quiet_zone() {
        let payload = br_code(
            &merchant(
                "123e4567-e12b-12d1-a456-426655440000",
                "Fulano de Tal",
                "BRASILIA",
            ),
            12_345,
            "INV0000000000000000000042",
        )
        .unwrap();
        let png_bytes = qr_png(&payload);
        assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");

        let qr = encode_qr(&payload);
        assert_eq!(qr.error_correction_level(), QrCodeEcc::Medium);
        let size = usize::try_from(qr.size()).unwrap();
        let side = (size + 8) * 8;

        let mut decoder = png::Decoder::new(std::io::Cursor::new(&png_bytes));
        // Expand the 1-bit image to one byte per pixel to read it back.
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let side_u32 = u32::try_from(side).unwrap();
        assert_eq!((info.width, info.height), (side_u32, side_u32));
        assert_eq!(info.color_type, png::ColorType::Grayscale);
        assert_eq!(info.bit_depth, png::BitDepth::Eight);

        // Every pixel is the colour of its module; the 4-module margin is white.
        for py in 0..side {
            for px in 0..side {
                let (mx, my) = (px / 8, py / 8);
                let in_symbol = (4..4 + size).contains(&mx) && (4..4 + size).contains(&my);
                let module = |m: usize| i32::try_from(m).unwrap() - 4;
                let dark = in_symbol && qr.get_module(module(mx), module(my));
                let expected = if dark { 0 } else { 255 };
                assert_eq!(
                    buf[py * info.line_size + px],
                    expected,
                    "pixel ({px}, {py})"
                );
            }
        }
    }
}
