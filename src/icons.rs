//! Icons as inline SVG: drawn with the text colour, the same in every
//! browser, needing no emoji or symbol font. Every icon is decorative
//! (`aria-hidden`): the words beside it say what it means.

macro_rules! svg {
    ($body:literal) => {
        concat!(
            r#"<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">"#,
            $body,
            "</svg>"
        )
    };
}

/// The SVG of the icon called `name`; an unknown name draws a dot.
pub fn svg(name: &str) -> &'static str {
    match name {
        "check" => svg!(r#"<polyline points="20 6 9 17 4 12"/>"#),
        "check-circle" => {
            svg!(r#"<circle cx="12" cy="12" r="10"/><polyline points="16 9 10.5 15 8 12.5"/>"#)
        }
        "ban" => svg!(
            r#"<circle cx="12" cy="12" r="10"/><line x1="4.93" y1="4.93" x2="19.07" y2="19.07"/>"#
        ),
        "clock" => svg!(r#"<circle cx="12" cy="12" r="10"/><polyline points="12 6 12 12 16 14"/>"#),
        "x" => {
            svg!(r#"<line x1="18" y1="6" x2="6" y2="18"/><line x1="6" y1="6" x2="18" y2="18"/>"#)
        }
        "agent" => svg!(
            r#"<rect x="4" y="8" width="16" height="12" rx="2"/><path d="M12 4v4"/><circle cx="12" cy="3" r="1"/><line x1="9" y1="13" x2="9" y2="14"/><line x1="15" y1="13" x2="15" y2="14"/>"#
        ),
        "person" => svg!(r#"<circle cx="12" cy="8" r="4"/><path d="M4 21c0-4 4-6 8-6s8 2 8 6"/>"#),
        "search" => {
            svg!(r#"<circle cx="11" cy="11" r="7"/><line x1="21" y1="21" x2="16.65" y2="16.65"/>"#)
        }
        "settings" => svg!(
            r#"<circle cx="12" cy="12" r="3"/><path d="M12 2v3M12 19v3M2 12h3M19 12h3M4.9 4.9l2.1 2.1M17 17l2.1 2.1M4.9 19.1 7 17M17 7l2.1-2.1"/>"#
        ),
        _ => svg!(r#"<circle cx="12" cy="12" r="3"/>"#),
    }
}

/// Text for HTML, escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icons_are_svg_without_glyphs() {
        for name in [
            "check",
            "check-circle",
            "ban",
            "clock",
            "x",
            "agent",
            "person",
            "?",
        ] {
            let s = svg(name);
            assert!(s.starts_with("<svg") && s.ends_with("</svg>"), "{name}");
            assert!(s.contains(r#"aria-hidden="true""#));
            assert!(s.is_ascii(), "{name} holds a glyph");
        }
    }

    #[test]
    fn escape_covers_markup() {
        assert_eq!(
            escape(r#"<a href="x">'&'"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;"
        );
    }
}
