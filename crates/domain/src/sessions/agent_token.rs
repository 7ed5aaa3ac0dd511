//! A session's agent token: revoked (the agent is locked out at once, its
//! event streams end at their next check) and, if asked, replaced by a new
//! one that is shown once. The session itself stays as it is; archiving is
//! separate (`widgets::archive_session`).

use secrecy::SecretString;

use super::{Session, store};
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::auth::tokens::{self, AGENT_TOKEN_PREFIX};
use crate::clock;
use crate::db::Db;
use crate::error::{Error, Result};

/// What revoking did.
pub struct Revoked {
    /// How many tokens stopped working (0 when there was none).
    pub revoked: u64,
    /// The new token, when one was asked for; shown this once.
    pub new_token: Option<SecretString>,
}

/// Revokes every agent token of `session` and, with `reissue`, mints a new
/// one, with a `session.revoke_agent_token` audit row (`revoked=N;
/// reissued=yes|no`), in one transaction. An archived session gets no new
/// token (`409 session_archived`): it would not work.
pub async fn revoke_agent_token(
    db: &Db,
    session: &Session,
    reissue: bool,
    actor: &Actor,
    client: &ClientAddr,
) -> Result<Revoked> {
    let mut tx = db.begin_write().await?;
    // Read again inside the transaction: an archive that just committed counts.
    let current = super::get_session(&mut tx, &session.id).await?;
    if reissue && current.archived_at.is_some() {
        return Err(Error::Conflict {
            code: "session_archived",
            message: "this session is archived; an agent token for it would not work".into(),
        });
    }
    let revoked = store::delete_agent_tokens(&mut tx, &session.id).await?;
    let new_token = match reissue {
        true => {
            let minted = tokens::generate(AGENT_TOKEN_PREFIX);
            store::insert_agent_token(&mut tx, &session.id, &minted.hash, clock::now_ms()).await?;
            Some(minted.token)
        }
        false => None,
    };
    let reissued = if reissue { "yes" } else { "no" };
    let entry = Entry {
        action: "session.revoke_agent_token",
        session: Some(&session.id),
        detail: Some(format!("revoked={revoked}; reissued={reissued}")),
        ..Default::default()
    };
    audit::append(&mut tx, actor, client, entry).await?;
    tx.commit().await?;
    Ok(Revoked { revoked, new_token })
}
