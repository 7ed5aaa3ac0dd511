//! An agent's image for `annotation`: base64 of a PNG, JPEG or WebP file of
//! at most 2 MiB, its type known by its magic bytes (never by what the
//! agent says). The size its header declares is checked first (each side
//! at most 16384 pixels, at most 16 megapixels in all), then the whole file
//! is decoded here, under the decoder's own limits, and encoded again: the
//! person's browser only ever gets an image this daemon wrote, whose size
//! is the size its pixels really have. A header that lies (no pixel data, a
//! size the data does not fill) or a decompression bomb is refused at
//! creation; nothing of the agent's file reaches a browser.

use std::io::Cursor;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

use crate::error::{Error, Result};

/// Most bytes of an image, as given and as encoded again.
pub const MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;
pub const MAX_STORED_BYTES: usize = 4 * 1024 * 1024;
/// Most pixels on either side.
pub const MAX_SIDE: u32 = 16_384;
/// Most pixels in all (16 megapixels: 64 MiB as 8-bit RGBA).
pub const MAX_PIXELS: u64 = 16 * 1024 * 1024;
/// Most memory the decoder may take (16-bit RGBA of `MAX_PIXELS`).
const MAX_DECODER_ALLOC: u64 = MAX_PIXELS * 8 + 1024 * 1024;
/// JPEG quality of what is served for a JPEG or an opaque WebP.
const JPEG_QUALITY: u8 = 90;

/// A checked image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub content_type: &'static str,
    pub width: u32,
    pub height: u32,
    pub bytes: Vec<u8>,
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
pub fn check(base64: &str) -> Result<Image> {
    // Base64 is 4 characters for 3 bytes: refuse a huge text before decoding it.
    if base64.len() > MAX_IMAGE_BYTES / 3 * 4 + 8 {
        return Err(Error::invalid(
            "image_too_large",
            format!("`widget.image` holds at most {MAX_IMAGE_BYTES} bytes"),
        ));
    }
    let bytes = STANDARD.decode(base64.trim()).map_err(|_| {
        Error::invalid(
            "invalid_image",
            "`widget.image` is the file itself as base64 (standard alphabet, with padding): \
             send the file's bytes encoded, not a path or a URL (widgetd never reads a file \
             or fetches an address an agent names)",
        )
    })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(Error::invalid(
            "image_too_large",
            format!(
                "`widget.image` has {} bytes; the limit is {MAX_IMAGE_BYTES}",
                bytes.len()
            ),
        ));
    }
    let (format, size) = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        (ImageFormat::Png, png(&bytes))
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        (ImageFormat::Jpeg, jpeg(&bytes))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        (ImageFormat::WebP, webp(&bytes))
    } else {
        return Err(Error::invalid(
            "unsupported_image",
            "`widget.image` is a PNG, JPEG or WebP file",
        ));
    };
    let (width, height) = size.ok_or_else(|| {
        Error::invalid(
            "invalid_image",
            "the header of `widget.image` does not read",
        )
    })?;
    check_size(width, height)?;
    let decoded = decode(&bytes, format, (width, height))?;
    let (content_type, bytes) = encode(&decoded, format)?;
    Ok(Image {
        content_type,
        width,
        height,
        bytes,
    })
}

/// Each side 1 to 16384 pixels, at most 16 megapixels in all.
fn check_size(width: u32, height: u32) -> Result<()> {
    if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(Error::invalid(
            "image_dimensions",
            format!("`widget.image` is {width}×{height} pixels; each side is 1 to {MAX_SIDE}"),
        ));
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(Error::invalid(
            "image_dimensions",
            format!(
                "`widget.image` is {width}×{height} pixels; at most {} megapixels in all",
                MAX_PIXELS / (1024 * 1024)
            ),
        ));
    }
    Ok(())
}

/// Decodes the whole file under limits; its pixels must have the size its
/// header declared.
fn decode(bytes: &[u8], format: ImageFormat, declared: (u32, u32)) -> Result<DynamicImage> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODER_ALLOC);
    reader.limits(limits);
    let refused = || {
        Error::invalid(
            "invalid_image",
            "`widget.image` does not decode whole: its pixel data is missing, cut short or damaged",
        )
    };
    let decoded = reader.decode().map_err(|err| match err {
        image::ImageError::Limits(_) => Error::invalid(
            "image_dimensions",
            "`widget.image` needs more memory to decode than an image of 16 megapixels",
        ),
        _ => refused(),
    })?;
    if (decoded.width(), decoded.height()) != declared {
        return Err(refused());
    }
    Ok(decoded)
}

/// The image as served: a PNG stays a PNG, a JPEG a JPEG; a WebP becomes
/// a PNG when it has transparency, else a JPEG.
fn encode(image: &DynamicImage, from: ImageFormat) -> Result<(&'static str, Vec<u8>)> {
    let png = from == ImageFormat::Png || (from == ImageFormat::WebP && image.color().has_alpha());
    let mut out = Cursor::new(Vec::new());
    let written = if png {
        image.write_to(&mut out, ImageFormat::Png)
    } else {
        let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
        rgb.write_with_encoder(encoder)
    };
    written.map_err(|err| anyhow::anyhow!("encoding an image failed: {err}"))?;
    let bytes = out.into_inner();
    if bytes.len() > MAX_STORED_BYTES {
        return Err(Error::invalid(
            "image_too_large",
            format!(
                "`widget.image` takes more than {MAX_STORED_BYTES} bytes once encoded again; send a smaller image"
            ),
        ));
    }
    Ok((if png { "image/png" } else { "image/jpeg" }, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage, Rgba, RgbaImage};

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn b64(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    /// The first bytes of a PNG of `w`×`h` (its header, nothing more).
    fn png_head(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    fn file(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    fn gradient(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        }))
    }

    #[test]
    fn sizes_are_read_from_headers() {
        assert_eq!(png(&png_head(640, 480)), Some((640, 480)));
        // JPEG: SOI, an APP0 segment, then SOF0 with height 300, width 400.
        let mut jpeg_head = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
        jpeg_head.extend([0; 14]);
        jpeg_head.extend([0xFF, 0xC0, 0, 17, 8, 0x01, 0x2C, 0x01, 0x90, 3]);
        assert_eq!(jpeg(&jpeg_head), Some((400, 300)));
        // WebP, lossless: 14 bits each of width-1 and height-1.
        let bits: u32 = 99 | (49 << 14);
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        lossless.extend(bits.to_le_bytes());
        assert_eq!(webp(&lossless), Some((100, 50)));
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        extended.extend([0x1F, 0x03, 0, 0xDF, 0x01, 0]);
        assert_eq!(webp(&extended), Some((800, 480)));
    }

    #[test]
    fn real_images_are_decoded_and_served_encoded_again() {
        for (given, format, served) in [
            (gradient(640, 480), ImageFormat::Png, "image/png"),
            (gradient(400, 300), ImageFormat::Jpeg, "image/jpeg"),
            (gradient(100, 50), ImageFormat::WebP, "image/jpeg"),
            (
                DynamicImage::ImageRgba8(RgbaImage::from_pixel(30, 20, Rgba([1, 2, 3, 4]))),
                ImageFormat::WebP,
                "image/png",
            ),
        ] {
            let checked = check(&b64(&file(&given, format))).unwrap();
            assert_eq!(
                (checked.content_type, checked.width, checked.height),
                (served, given.width(), given.height()),
                "{format:?}"
            );
            let again = image::load_from_memory(&checked.bytes).unwrap();
            assert_eq!(
                (again.width(), again.height()),
                (given.width(), given.height())
            );
        }
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
        // Sides within 16384, but more than 16 megapixels in all.
        assert_eq!(
            code(check(&b64(&png_head(16_384, 16_384)))),
            "image_dimensions"
        );
        assert_eq!(
            code(check(&b64(&png_head(4_097, 4_097)))),
            "image_dimensions"
        );
        // A header that declares what the file does not hold.
        assert_eq!(code(check(&b64(&png_head(1_000, 1_000)))), "invalid_image");
        let mut cut = file(&gradient(64, 64), ImageFormat::Png);
        cut.truncate(cut.len() / 2);
        assert_eq!(code(check(&b64(&cut))), "invalid_image");
        let mut big = png_head(10, 10);
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert_eq!(code(check(&b64(&big))), "image_too_large");
        assert_eq!(code(check(&"A".repeat(3_000_000))), "image_too_large");
    }
}
