//! The `env_vars` card (`templates/widgets/env_vars.html`): the names, the
//! reason, the instructions, one masked input per name, the scope.

use askama::Template;

use super::markdown;
use crate::cards::{self, Card};
use widgetd_domain::Result;
use widgetd_domain::widgets::kinds::env_vars::{EnvVarsParams, ScopeChoice};

/// One input of the form.
struct NameField {
    name: String,
    input_id: String,
    multiline: bool,
    description: Option<String>,
    placeholder: String,
    /// A global value exists that can be reused.
    saved: bool,
    error: Option<String>,
}

/// The request as shown.
struct EnvVarsView {
    /// The user whose vault receives the values (the session's creator).
    vault_owner: String,
    fields: Vec<NameField>,
    names: String,
    reason: String,
    instructions_html: Option<String>,
    global_default: bool,
}

#[derive(Template)]
#[template(path = "widgets/env_vars.html")]
struct EnvVarsCard<'a> {
    card: &'a Card<'a>,
    env: EnvVarsView,
}

/// Whether `text` names `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

fn fields(params: &EnvVarsParams, card: &Card<'_>) -> Vec<NameField> {
    params
        .names
        .iter()
        .map(|name| {
            let meta = params
                .variable_metadata
                .get(name.as_str())
                .cloned()
                .unwrap_or_default();
            NameField {
                name: name.to_string(),
                input_id: format!("w-{}-{name}", card.id),
                multiline: meta.multiline,
                description: meta.description,
                placeholder: meta.placeholder.unwrap_or_default(),
                saved: card.vault.saved_globals.contains(name.as_str()),
                // Our messages name the variable they are about.
                error: card
                    .error_message()
                    .filter(|e| mentions(e, name.as_str()))
                    .map(str::to_owned),
            }
        })
        .collect()
}

/// The inside of an `env_vars` card.
pub(super) fn render(params: &EnvVarsParams, card: &Card<'_>) -> Result<String> {
    let env = EnvVarsView {
        vault_owner: card.vault.owner.clone(),
        fields: fields(params, card),
        names: params.name_strs().join(", "),
        reason: params.reason.clone(),
        instructions_html: params.instructions.as_deref().map(markdown::render),
        global_default: params.default_scope == ScopeChoice::Global,
    };
    cards::render(&EnvVarsCard { card, env })
}
