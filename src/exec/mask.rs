//! Streaming redaction of known secret values in a child's output.
//!
//! Output arrives in arbitrary chunks, so a value may be split across two
//! reads. The masker holds back only the shortest tail that could still
//! grow into a value, and emits everything before it at once.

use zeroize::Zeroizing;

/// What a masked value is replaced with.
pub const MASK: &[u8] = b"<concealed by widgetd>";

/// Values shorter than this are not masked: masking "1" or "on" would
/// garble ordinary output while hiding nothing worth hiding.
pub const MIN_MASKED_LEN: usize = 4;

/// Lines of a multi-line value at least this long are masked on their own
/// too, so that a partly printed key file is still concealed.
const MIN_MASKED_LINE_LEN: usize = 8;

/// Redacts a fixed set of byte strings from a stream.
pub struct Masker {
    needles: Vec<Zeroizing<Vec<u8>>>,
    pending: Zeroizing<Vec<u8>>,
}

impl Masker {
    /// A masker for `values` (and the long lines of multi-line ones).
    pub fn new<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut needles: Vec<Zeroizing<Vec<u8>>> = Vec::new();
        for value in values {
            if value.len() >= MIN_MASKED_LEN {
                needles.push(Zeroizing::new(value.as_bytes().to_vec()));
            }
            if value.contains('\n') {
                let lines = value
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.len() >= MIN_MASKED_LINE_LEN);
                needles.extend(lines.map(|l| Zeroizing::new(l.as_bytes().to_vec())));
            }
        }
        // Longest first, so a value wins over one of its own lines.
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        Self {
            needles,
            pending: Zeroizing::new(Vec::new()),
        }
    }

    /// Whether there is anything to mask at all.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// Takes a chunk of output; returns what can be written now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        self.drain(false)
    }

    /// Ends the stream; returns the rest.
    pub fn finish(&mut self) -> Vec<u8> {
        self.drain(true)
    }

    fn drain(&mut self, at_end: bool) -> Vec<u8> {
        let buf = &self.pending;
        let mut out = Vec::with_capacity(buf.len());
        let mut i = 0;
        while i < buf.len() {
            let rest = &buf[i..];
            // A longer value may still be arriving: wait for more bytes.
            if !at_end
                && self
                    .needles
                    .iter()
                    .any(|n| n.len() > rest.len() && n.starts_with(rest))
            {
                break;
            }
            match self.needles.iter().find(|n| rest.starts_with(n)) {
                Some(needle) => {
                    out.extend_from_slice(MASK);
                    i += needle.len();
                }
                None => {
                    out.push(rest[0]);
                    i += 1;
                }
            }
        }
        self.pending.drain(..i);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask_in_chunks(values: &[&str], input: &str, chunk: usize) -> String {
        let mut masker = Masker::new(values.iter().copied());
        let mut out = Vec::new();
        for piece in input.as_bytes().chunks(chunk) {
            out.extend(masker.push(piece));
        }
        out.extend(masker.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn masks_values_split_across_any_chunk_boundary() {
        let input = "key=sk-live-123456 and again sk-live-123456!";
        for chunk in 1..=input.len() {
            assert_eq!(
                mask_in_chunks(&["sk-live-123456"], input, chunk),
                "key=<concealed by widgetd> and again <concealed by widgetd>!",
                "chunk size {chunk}"
            );
        }
    }

    #[test]
    fn prefers_the_longest_value_and_masks_lines_of_multi_line_values() {
        let pem = "-----BEGIN KEY-----\nMIIEabcdefgh\n-----END KEY-----";
        assert_eq!(
            mask_in_chunks(&["abcd", "abcdef"], "xabcdefx", 3),
            "x<concealed by widgetd>x"
        );
        assert_eq!(
            mask_in_chunks(&[pem], &format!("[{pem}]"), 5),
            "[<concealed by widgetd>]"
        );
        assert_eq!(
            mask_in_chunks(&[pem], "partial: MIIEabcdefgh\n", 4),
            "partial: <concealed by widgetd>\n"
        );
    }

    #[test]
    fn leaves_short_values_and_other_output_alone() {
        assert_eq!(mask_in_chunks(&["on"], "on and on", 2), "on and on");
        let masker = Masker::new(["abc"]);
        assert!(masker.is_empty());
        assert_eq!(
            mask_in_chunks(&["secret-1"], "secret-2 secret-", 1),
            "secret-2 secret-"
        );
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// A value (8+ bytes, one line) anywhere in the output, split at
        /// any chunk boundaries, comes out masked exactly where a plain
        /// replace would mask it, and nothing else changes.
        #[test]
        fn a_value_split_across_any_chunk_boundary_is_masked(
            value in "[a-c0-9_-]{8,24}",
            pieces in proptest::collection::vec(prop_oneof![Just(None), "[a-c0-9 \n-]{0,12}".prop_map(Some)], 1..10),
            cuts in proptest::collection::vec(1usize..16, 1..40),
        ) {
            let input: String = pieces.into_iter().map(|p| p.unwrap_or_else(|| value.clone())).collect();
            let mut masker = Masker::new([value.as_str()]);
            let (mut out, mut rest, mut cut) = (Vec::new(), input.as_bytes(), cuts.iter().cycle());
            while !rest.is_empty() {
                let n = (*cut.next().unwrap()).min(rest.len());
                out.extend(masker.push(&rest[..n]));
                rest = &rest[n..];
            }
            out.extend(masker.finish());
            let out = String::from_utf8(out).unwrap();
            prop_assert!(!out.contains(&value), "{value:?} in {out:?}");
            let mask = std::str::from_utf8(MASK).unwrap();
            prop_assert_eq!(out, input.replace(&value, mask));
        }
    }
}
