//! Replies: a person writes to the agent from the box under the transcript
//! ("the widget is a hint, not a constraint"). The text becomes a
//! transcript message (role `user`, with its author) and a resume prompt,
//! in one transaction with its event and audit row.

use super::{Role, insert_text};
use crate::access::{self, Caller, Need};
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::error::{Error, Result};
use crate::ids::SessionId;
use crate::{Core, prompts, secrets, sessions};

/// The longest reply, in characters: a message to the agent, not a document.
pub const MAX_REPLY_CHARS: usize = 4_000;

/// A reply as the agent will read it: line ends as typed (the browser's
/// CRLF becomes LF), no control characters other than newline and tab,
/// no white space around it, 1 to [`MAX_REPLY_CHARS`] characters.
#[derive(Debug)]
pub struct ReplyText(String);

impl ReplyText {
    /// Cleans and checks `raw`; the error never quotes it.
    pub fn parse(raw: &str) -> Result<Self> {
        let text: String = raw
            .replace("\r\n", "\n")
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        let text = text.trim();
        let len = text.chars().count();
        if text.is_empty() || len > MAX_REPLY_CHARS {
            return Err(Error::invalid(
                "invalid_text",
                format!("a reply needs 1 to {MAX_REPLY_CHARS} characters; it has {len}"),
            ));
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The person's reply, written.
pub struct Reply {
    pub session: SessionId,
    pub message_id: i64,
}

/// `user` (named `author`) writes `text` to the agent of session `id`: the
/// message, its event, the prompt and a `transcript.reply` audit row
/// commit together. Needs the right to answer the session's widgets
/// (`Need::Answer`); refused with `answer_contains_secret` when the text
/// holds one of the creator's stored values.
pub async fn post_reply(
    state: &Core,
    id: &str,
    user: (&crate::ids::UserId, &str),
    text: &ReplyText,
    client: &ClientAddr,
) -> Result<Reply> {
    let id = SessionId::parse(id).ok_or(Error::NotFound("session"))?;
    let mut tx = state.db.begin_write().await?;
    let session = sessions::get_session(&mut tx, &id).await?;
    access::check(&mut tx, Caller::Person(user.0), &session, Need::Answer).await?;
    secrets::refuse_stored_values(
        &mut tx,
        &state.keyring,
        &session.creator_id,
        &[text.as_str()],
    )
    .await?;
    let message_id = insert_text(&mut tx, &id, Role::User, Some(user), text.as_str()).await?;
    let prompt = prompts::reply_prompt(&state.settings.prompt_tag, user.1, text.as_str());
    prompts::queue_reply(&mut tx, &id, message_id, &prompt).await?;
    let entry = Entry {
        action: "transcript.reply",
        session: Some(&id),
        detail: Some(format!("message={message_id}")),
        ..Default::default()
    };
    audit::append(&mut tx, &Actor::User(user.0.clone()), client, entry).await?;
    tx.commit().await?;
    state.hub.publish(&id);
    Ok(Reply {
        session: id,
        message_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_keep_their_lines_and_lose_control_characters() {
        let text = ReplyText::parse("  use the staging db\r\nthen\tstop\u{7}\u{0}  ").unwrap();
        assert_eq!(text.as_str(), "use the staging db\nthen\tstop");
        assert!(ReplyText::parse(" \r\n\u{1b} ").is_err());
        let long = "é".repeat(MAX_REPLY_CHARS + 1);
        let err = ReplyText::parse(&long).unwrap_err().to_string();
        assert!(!err.contains('é'), "{err}");
        assert!(ReplyText::parse(&long[..long.len() - 2]).is_ok());
    }
}
