//! The command lines of `docs/integrations.md` that the agent tests run:
//! read from the doc between `<!-- tested: NAME -->` and `<!-- /tested -->`,
//! so the doc cannot drift from what is tested.

use std::path::Path;

/// The words of the shell command in the doc's block `name`, with
/// `"$SESSION"` replaced by `session`.
pub fn command(name: &str, session: &str) -> Vec<String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/integrations.md"))
            .unwrap();
    let open = format!("<!-- tested: {name} -->");
    let block = doc
        .split(&open)
        .nth(1)
        .and_then(|rest| rest.split("<!-- /tested -->").next())
        .unwrap_or_else(|| panic!("docs/integrations.md has no block {open}"));
    let code = block
        .split("```sh")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("the block {name} holds no ```sh code"));
    words(&code.replace("\\\n", " "))
        .into_iter()
        .map(|w| {
            if w == "$SESSION" {
                session.to_owned()
            } else {
                w
            }
        })
        .collect()
}

/// Splits a shell line into words: blanks separate, single and double
/// quotes group (no expansion inside, but `$SESSION` is kept as a word).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "an unclosed quote in {line}");
    words.extend(word);
    words
}

#[test]
fn doc_commands_split_as_the_shell_splits_them() {
    assert_eq!(
        words("claude -p \"{prompt}\" --x 'a b' \"$SESSION\""),
        ["claude", "-p", "{prompt}", "--x", "a b", "$SESSION"]
    );
    let host = command("claude-host", "S");
    assert_eq!(host[..2], ["widgetd", "host"]);
    assert!(host.contains(&"S".to_owned()), "{host:?}");
}
