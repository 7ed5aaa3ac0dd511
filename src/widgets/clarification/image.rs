//! An agent's image for `annotation`: base64 of a PNG, JPEG or WebP file of
//! at most 2 MiB, its type known by its magic bytes (never by what the
//! agent says) and its size in pixels read from its header. Nothing else
//! of the file is parsed: the browser draws it, served by the daemon with
//! the checked type.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::{AppError, AppResult};

/// Most bytes of an image.
pub const MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;
/// Most pixels on either side.
pub const MAX_SIDE: u32 = 16_384;

/// A checked image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub content_type: &'static str,
    pub width: u32,
    pub height: u32,
    pub bytes: Vec<u8>,
}

fn invalid(code: &'static str, message: impl Into<String>) -> AppError {
    AppError::invalid(code, message)
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 3)?;
    Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
}

/// PNG: the IHDR chunk comes first.
fn png(b: &[u8]) -> Option<(u32, u32)> {
    (b.get(12..16)? == b"IHDR").then_some(())?;
    Some((be32(b, 16)?, be32(b, 20)?))
}

/// JPEG: the first start-of-frame segment (SOF0 to SOF15 but DHT, JPG and
/// DAC) holds the size.
fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        while *b.get(at)? != 0xFF {
            at += 1;
        }
        while *b.get(at)? == 0xFF {
            at += 1;
        }
        let marker = *b.get(at)?;
        at += 1;
        if matches!(marker, 0xD8 | 0x01 | 0xD0..=0xD7) {
            continue;
        }
        let len = be16(b, at)? as usize;
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            return Some((be16(b, at + 5)?, be16(b, at + 3)?));
        }
        if len < 2 {
            return None;
        }
        at += len;
    }
}

/// WebP: a `VP8 ` (lossy), `VP8L` (lossless) or `VP8X` (extended) chunk
/// right after the RIFF header.
fn webp(b: &[u8]) -> Option<(u32, u32)> {
    match b.get(12..16)? {
        b"VP8 " => {
            (b.get(23..26)? == [0x9D, 0x01, 0x2A]).then_some(())?;
            Some((le16(b, 26)? & 0x3FFF, le16(b, 28)? & 0x3FFF))
        }
        b"VP8L" => {
            (*b.get(20)? == 0x2F).then_some(())?;
            let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
        _ => None,
    }
}

/// Decodes and checks `base64`. Codes: `invalid_image` (not base64, or a
/// header that does not read), `image_too_large`, `unsupported_image`
/// (not PNG, JPEG or WebP), `image_dimensions` (a side of 0 or past
/// 16384 pixels).
pub fn check(base64: &str) -> AppResult<Image> {
    // Base64 is 4 characters for 3 bytes: refuse a huge text before decoding it.
    if base64.len() > MAX_IMAGE_BYTES / 3 * 4 + 8 {
        return Err(invalid(
            "image_too_large",
            format!("`widget.image` holds at most {MAX_IMAGE_BYTES} bytes"),
        ));
    }
    let bytes = STANDARD.decode(base64.trim()).map_err(|_| {
        invalid(
            "invalid_image",
            "`widget.image` is the file as base64 (standard alphabet, with padding), not a path or a URL",
        )
    })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(invalid(
            "image_too_large",
            format!(
                "`widget.image` has {} bytes; the limit is {MAX_IMAGE_BYTES}",
                bytes.len()
            ),
        ));
    }
    let (content_type, size) = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        ("image/png", png(&bytes))
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        ("image/jpeg", jpeg(&bytes))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        ("image/webp", webp(&bytes))
    } else {
        return Err(invalid(
            "unsupported_image",
            "`widget.image` is a PNG, JPEG or WebP file",
        ));
    };
    let (width, height) = size.ok_or_else(|| {
        invalid(
            "invalid_image",
            "the header of `widget.image` does not read",
        )
    })?;
    if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(invalid(
            "image_dimensions",
            format!("`widget.image` is {width}×{height} pixels; each side is 1 to {MAX_SIDE}"),
        ));
    }
    Ok(Image {
        content_type,
        width,
        height,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T: std::fmt::Debug>(result: AppResult<T>) -> &'static str {
        match result {
            Err(AppError::Invalid { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn b64(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    /// The first bytes of a PNG of `w`×`h` (enough for its header).
    fn png_head(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    #[test]
    fn types_are_known_by_their_magic_bytes_and_sizes_read_from_headers() {
        let png = check(&b64(&png_head(640, 480))).unwrap();
        assert_eq!(
            (png.content_type, png.width, png.height),
            ("image/png", 640, 480)
        );

        // JPEG: SOI, an APP0 segment, then SOF0 with height 300, width 400.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
        jpeg.extend([0; 14]);
        jpeg.extend([0xFF, 0xC0, 0, 17, 8, 0x01, 0x2C, 0x01, 0x90, 3]);
        let jpeg = check(&b64(&jpeg)).unwrap();
        assert_eq!(
            (jpeg.content_type, jpeg.width, jpeg.height),
            ("image/jpeg", 400, 300)
        );

        // WebP, lossless: 14 bits each of width-1 and height-1.
        let bits: u32 = 99 | (49 << 14);
        let mut webp = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        webp.extend(bits.to_le_bytes());
        let webp = check(&b64(&webp)).unwrap();
        assert_eq!(
            (webp.content_type, webp.width, webp.height),
            ("image/webp", 100, 50)
        );
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        extended.extend([0x1F, 0x03, 0, 0xDF, 0x01, 0]);
        let extended = check(&b64(&extended)).unwrap();
        assert_eq!((extended.width, extended.height), (800, 480));
    }

    #[test]
    fn everything_else_is_refused_with_a_code() {
        assert_eq!(code(check("/tmp/picture.png")), "invalid_image");
        assert_eq!(code(check("https://example.com/x.png")), "invalid_image");
        assert_eq!(
            code(check(&b64(b"GIF89a\x01\0\x01\0"))),
            "unsupported_image"
        );
        assert_eq!(
            code(check(&b64(b"<svg onload=alert(1)>"))),
            "unsupported_image"
        );
        assert_eq!(code(check(&b64(b"\x89PNG\r\n\x1a\n"))), "invalid_image");
        assert_eq!(code(check(&b64(&png_head(0, 10)))), "image_dimensions");
        assert_eq!(code(check(&b64(&png_head(20_000, 10)))), "image_dimensions");
        let mut big = png_head(10, 10);
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert_eq!(code(check(&b64(&big))), "image_too_large");
        let mut fits = png_head(10, 10);
        fits.resize(MAX_IMAGE_BYTES, 0);
        assert!(check(&b64(&fits)).is_ok());
        assert_eq!(code(check(&"A".repeat(3_000_000))), "image_too_large");
    }
}
