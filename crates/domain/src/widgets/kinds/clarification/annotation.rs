//! `annotation`: the agent gives an image (base64 of a PNG, JPEG or WebP of
//! at most 2 MiB, see [`image`](super::image)) and the drawing tools the
//! person may use (`rectangle`, `circle`, `arrow`, `text`); the person draws
//! on it. `structured` is `{"annotations": [{tool, coords, text?}…]}` in
//! image pixels: a rectangle `[x, y, width, height]`, a circle `[cx, cy,
//! r]`, an arrow `[x1, y1, x2, y2]` (pointing at the second point), a text
//! `[x, y]` with its `text`.
//!
//! The image, decoded and encoded again by the daemon (never the agent's
//! file), is stored with the widget and served at
//! `/widgets/{id}/image` with its type, to
//! those who may see the session; the agent's view of the widget leaves
//! its bytes out. Without JavaScript the card shows the image, answered in
//! words; `static/clarification/annotation.js` draws on a canvas over it
//! (sized to the image as shown, never to the image) and keeps the drawings in the form field `annotations` (JSON).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::image;
use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};

/// Most drawings in one answer.
const MAX_ANNOTATIONS: usize = 100;
/// Most characters of a text drawing.
const MAX_TEXT_CHARS: usize = 200;
/// How far past the image's edge a drawing may reach (rounding).
const SLACK: f64 = 0.1;
/// The form field holding the drawings as JSON.
pub const FIELD: &str = "annotations";

/// The `annotation` type.
pub struct Annotation;

/// A drawing tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    Rectangle,
    Circle,
    Arrow,
    Text,
}

impl Tool {
    const ALL: [Tool; 4] = [Tool::Rectangle, Tool::Circle, Tool::Arrow, Tool::Text];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Rectangle => "rectangle",
            Tool::Circle => "circle",
            Tool::Arrow => "arrow",
            Tool::Text => "text",
        }
    }
}

fn all_tools() -> Vec<Tool> {
    Tool::ALL.to_vec()
}

/// An `annotation` widget as the agent sends it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnotationInput {
    /// The image itself, base64 (standard alphabet, with padding) of a PNG,
    /// JPEG or WebP file of at most 2 MiB. Never a path or a URL.
    pub image: String,
    /// The tools the user may draw with, any of `rectangle`, `circle`,
    /// `arrow`, `text` (default all four).
    #[serde(default = "all_tools")]
    pub tools: Vec<Tool>,
}

/// The image as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredImage {
    pub content_type: String,
    pub width: u32,
    pub height: u32,
    pub bytes: usize,
    /// The file, base64; left out of the agent's view of the widget.
    pub data: String,
}

/// An `annotation` widget as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnnotationWidget {
    pub image: StoredImage,
    pub tools: Vec<Tool>,
}

/// One drawing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drawing {
    pub tool: Tool,
    pub coords: Vec<f64>,
    #[serde(default)]
    pub text: Option<String>,
}

/// The `structured` answer: the drawings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationAnswer {
    #[serde(default)]
    pub annotations: Vec<Drawing>,
}

/// Coordinates rounded to a tenth of a pixel.
fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Checks drawing `n` (1-based) against an image of `w`×`h`.
fn check_drawing(n: usize, d: &Drawing, w: f64, h: f64) -> Result<()> {
    let count = match d.tool {
        Tool::Rectangle | Tool::Arrow => 4,
        Tool::Circle => 3,
        Tool::Text => 2,
    };
    if d.coords.len() != count || d.coords.iter().any(|c| !c.is_finite()) {
        return Err(Error::invalid(
            "invalid_coords",
            format!(
                "drawing {n} (a {}) has {count} numbers as coords",
                d.tool.name()
            ),
        ));
    }
    // A tenth of a pixel of slack: the page rounds to tenths.
    let inside =
        |x: f64, y: f64| (-SLACK..=w + SLACK).contains(&x) && (-SLACK..=h + SLACK).contains(&y);
    let c = &d.coords;
    let fits = match d.tool {
        Tool::Rectangle => {
            c[2] > 0.0 && c[3] > 0.0 && inside(c[0], c[1]) && inside(c[0] + c[2], c[1] + c[3])
        }
        Tool::Circle => {
            c[2] > 0.0 && inside(c[0] - c[2], c[1] - c[2]) && inside(c[0] + c[2], c[1] + c[2])
        }
        Tool::Arrow => inside(c[0], c[1]) && inside(c[2], c[3]) && (c[0], c[1]) != (c[2], c[3]),
        Tool::Text => inside(c[0], c[1]),
    };
    if !fits {
        return Err(Error::invalid(
            "coords_outside_image",
            format!("drawing {n} is not inside the {w}×{h} image, or has no size"),
        ));
    }
    match (d.tool, d.text.as_deref()) {
        (Tool::Text, Some(text)) => {
            let chars = text.chars().count();
            if text.trim().is_empty()
                || chars > MAX_TEXT_CHARS
                || text.chars().any(char::is_control)
            {
                return Err(Error::invalid(
                    "invalid_text",
                    format!(
                        "the text of drawing {n} is 1 to {MAX_TEXT_CHARS} characters of one line"
                    ),
                ));
            }
        }
        (Tool::Text, None) => {
            return Err(Error::invalid(
                "invalid_text",
                format!("drawing {n} is a text without `text`"),
            ));
        }
        (_, Some(_)) => {
            return Err(Error::invalid(
                "invalid_text",
                format!("drawing {n} is not a text: it has no `text`"),
            ));
        }
        (_, None) => {}
    }
    Ok(())
}

impl ClarificationType for Annotation {
    const TYPE: &'static str = "annotation";
    type Input = AnnotationInput;
    type Params = AnnotationWidget;
    type Answer = AnnotationAnswer;

    fn parse(input: AnnotationInput) -> Result<AnnotationWidget> {
        let checked = image::check(&input.image)?;
        let mut tools = Vec::new();
        for tool in Tool::ALL {
            if input.tools.contains(&tool) {
                tools.push(tool);
            }
        }
        if tools.is_empty() || tools.len() != input.tools.len() {
            return Err(Error::invalid(
                "invalid_tools",
                "`widget.tools` names each of `rectangle`, `circle`, `arrow`, `text` at most once, and at least one",
            ));
        }
        Ok(AnnotationWidget {
            image: StoredImage {
                content_type: checked.content_type.to_owned(),
                width: checked.width,
                height: checked.height,
                bytes: checked.bytes.len(),
                data: STANDARD.encode(&checked.bytes),
            },
            tools,
        })
    }

    fn untouched(_: &AnnotationWidget) -> AnnotationAnswer {
        AnnotationAnswer::default()
    }

    /// `annotations`: the drawings as the JSON array a JSON answer gives
    /// (empty or missing: none).
    fn from_form(_: &AnnotationWidget, fields: &[(String, String)]) -> Result<AnnotationAnswer> {
        let Some((_, text)) = fields
            .iter()
            .find(|(k, v)| k == FIELD && !v.trim().is_empty())
        else {
            return Ok(AnnotationAnswer::default());
        };
        let annotations: Vec<Drawing> = serde_json::from_str(text).map_err(|_| {
            Error::invalid(
                "invalid_annotations",
                "the drawings of the form do not read",
            )
        })?;
        Ok(AnnotationAnswer { annotations })
    }

    /// Only the allowed tools, every drawing inside the image; numbers
    /// rounded to a tenth of a pixel.
    fn check(params: &AnnotationWidget, answer: AnnotationAnswer) -> Result<Structured> {
        if answer.annotations.len() > MAX_ANNOTATIONS {
            return Err(Error::invalid(
                "too_many_annotations",
                format!("an answer holds at most {MAX_ANNOTATIONS} drawings"),
            ));
        }
        let (w, h) = (
            f64::from(params.image.width),
            f64::from(params.image.height),
        );
        let mut typed = Vec::new();
        let mut drawings = Vec::new();
        for (i, d) in answer.annotations.iter().enumerate() {
            if !params.tools.contains(&d.tool) {
                return Err(Error::invalid(
                    "tool_not_allowed",
                    format!("drawing {} uses a tool this question does not offer", i + 1),
                ));
            }
            check_drawing(i + 1, d, w, h)?;
            let coords: Vec<f64> = d.coords.iter().map(|&c| round(c)).collect();
            let mut drawing = json!({ "tool": d.tool.name(), "coords": coords });
            if let Some(text) = &d.text {
                drawing["text"] = json!(text);
                typed.push(text.clone());
            }
            drawings.push(drawing);
        }
        Ok(Structured {
            used: !drawings.is_empty(),
            value: json!({ "annotations": drawings }),
            typed,
        })
    }

    /// The image's bytes stay with the daemon.
    fn public(params: &mut Value) {
        if let Some(image) = params.get_mut("image").and_then(Value::as_object_mut) {
            image.remove("data");
        }
    }
}

/// The image's bytes and type, from the stored params.
pub fn image_of(params: &AnnotationWidget) -> Option<(String, Vec<u8>)> {
    let bytes = STANDARD.decode(&params.image.data).ok()?;
    Some((params.image.content_type.clone(), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget(tools: &[Tool]) -> AnnotationWidget {
        AnnotationWidget {
            image: StoredImage {
                content_type: "image/png".into(),
                width: 400,
                height: 300,
                bytes: 10,
                data: String::new(),
            },
            tools: tools.to_vec(),
        }
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn drawing(tool: Tool, coords: &[f64], text: Option<&str>) -> AnnotationAnswer {
        AnnotationAnswer {
            annotations: vec![Drawing {
                tool,
                coords: coords.to_vec(),
                text: text.map(str::to_owned),
            }],
        }
    }

    #[test]
    fn drawings_stay_inside_the_image_with_allowed_tools() {
        let all = widget(&Tool::ALL);
        let ok = [
            drawing(Tool::Rectangle, &[10.04, 20.0, 390.0, 280.0], None),
            drawing(Tool::Circle, &[200.0, 150.0, 150.0], None),
            drawing(Tool::Arrow, &[0.0, 0.0, 400.0, 300.0], None),
            drawing(Tool::Text, &[5.0, 5.0], Some("here")),
        ];
        for answer in ok {
            assert!(Annotation::check(&all, answer).unwrap().used);
        }
        let s = Annotation::check(
            &all,
            drawing(Tool::Rectangle, &[10.04, 20.0, 5.0, 5.0], None),
        )
        .unwrap();
        assert_eq!(
            s.value,
            json!({ "annotations": [{ "tool": "rectangle", "coords": [10.0, 20.0, 5.0, 5.0] }] })
        );
        let bad = [
            (
                drawing(Tool::Rectangle, &[10.0, 20.0, 391.0, 5.0], None),
                "coords_outside_image",
            ),
            (
                drawing(Tool::Rectangle, &[10.0, 20.0, 0.0, 5.0], None),
                "coords_outside_image",
            ),
            (
                drawing(Tool::Rectangle, &[-1.0, 20.0, 5.0, 5.0], None),
                "coords_outside_image",
            ),
            (
                drawing(Tool::Circle, &[200.0, 150.0, 151.0], None),
                "coords_outside_image",
            ),
            (
                drawing(Tool::Arrow, &[1.0, 1.0, 1.0, 1.0], None),
                "coords_outside_image",
            ),
            (
                drawing(Tool::Text, &[401.0, 5.0], Some("x")),
                "coords_outside_image",
            ),
            (
                drawing(Tool::Rectangle, &[1.0, 2.0, 3.0], None),
                "invalid_coords",
            ),
            (
                drawing(Tool::Rectangle, &[1.0, 2.0, f64::NAN, 3.0], None),
                "invalid_coords",
            ),
            (drawing(Tool::Text, &[5.0, 5.0], None), "invalid_text"),
            (drawing(Tool::Text, &[5.0, 5.0], Some(" ")), "invalid_text"),
            (
                drawing(Tool::Arrow, &[1.0, 1.0, 2.0, 2.0], Some("x")),
                "invalid_text",
            ),
        ];
        for (answer, want) in bad {
            assert_eq!(code(Annotation::check(&all, answer)), want);
        }
        let boxes = widget(&[Tool::Rectangle]);
        assert_eq!(
            code(Annotation::check(
                &boxes,
                drawing(Tool::Circle, &[200.0, 150.0, 10.0], None)
            )),
            "tool_not_allowed"
        );
        let none = Annotation::check(&boxes, Annotation::untouched(&boxes)).unwrap();
        assert!(!none.used);
        let fields = [("annotations".to_owned(), "[{\"tool\":".to_owned())];
        assert_eq!(
            code(Annotation::from_form(&boxes, &fields)),
            "invalid_annotations"
        );
    }
}
