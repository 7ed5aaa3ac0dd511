//! A permission check decided in widgetd: a standing "Always" rule answers
//! at once; otherwise an approval card waits for the person. The answer
//! goes back to the waiting hook and only there: its resume prompt is
//! marked delivered once the hook's response is sent, so no later turn
//! starts from a call Claude Code already settled. A hook that stops
//! waiting (widgetd's `wait` ran out, or Claude Code dropped the request)
//! ends the card, so nobody answers a call that is no longer asked.

use std::sync::Arc;

use crate::error::WebResult;
use widgetd_domain::Core;
use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::ids::WidgetId;
use widgetd_domain::sessions::Session;
use widgetd_domain::widgets::kinds::approval::{self, ApprovalParams};
use widgetd_domain::widgets::{self, Answered, Approval, Cause, WidgetStatus};

use super::output::Verdict;

/// What the card's badge says when the hook stopped waiting.
pub const STOPPED_WAITING: &str = "Claude Code stopped waiting";

/// The verdict, and the widget whose prompt the response delivers.
pub struct Decided {
    pub verdict: Verdict,
    pub answered: Option<Answered>,
}

/// Decides `params` for `session`, waiting up to `wait` seconds.
pub async fn decide(
    state: &Arc<Core>,
    session: &Session,
    params: ApprovalParams,
    wait: u64,
    actor: &Actor,
    client: &ClientAddr,
) -> WebResult<Decided> {
    let mut conn = state.db.read.acquire().await?;
    if approval::matching_rule(&mut conn, &session.creator_id, &session.id, &params)
        .await?
        .is_some()
    {
        let verdict = Verdict::AlwaysAllowed;
        return Ok(Decided {
            verdict,
            answered: None,
        });
    }
    drop(conn);
    let cause = Cause { actor, client };
    let created = widgets::create::<Approval>(state, &session.id, params, cause).await?;
    let answered = Answered {
        session: session.id.clone(),
        widget: created.widget_id.clone(),
    };
    if created.status != WidgetStatus::Pending {
        // Born allowed by a rule that came in between: its prompt too is
        // this response's.
        let verdict = Verdict::from_result(created.status, None);
        let answered = Some(answered);
        return Ok(Decided { verdict, answered });
    }
    let mut give_up = GiveUp {
        state: state.clone(),
        widget: Some(created.widget_id.clone()),
        actor: actor.clone(),
        client: client.clone(),
    };
    let view = widgets::wait_for_answer(state, &created.widget_id, wait).await?;
    let view = match view.status {
        WidgetStatus::Pending => give_up.now().await?,
        _ => {
            give_up.widget = None;
            Some(view)
        }
    };
    Ok(match view {
        Some(view) => Decided {
            verdict: Verdict::from_result(view.status, view.result.as_ref()),
            answered: Some(answered),
        },
        None => Decided {
            verdict: Verdict::Unanswered,
            answered: None,
        },
    })
}

/// Ends the card of a check nobody waits for any more: now, when the wait
/// ran out, or when dropped, when Claude Code dropped the request first.
struct GiveUp {
    state: Arc<Core>,
    widget: Option<WidgetId>,
    actor: Actor,
    client: ClientAddr,
}

impl GiveUp {
    /// Ends the card; an answer that came first is returned instead.
    async fn now(&mut self) -> WebResult<Option<widgets::WidgetView>> {
        let Some(widget) = self.widget.take() else {
            return Ok(None);
        };
        let cause = Cause {
            actor: &self.actor,
            client: &self.client,
        };
        Ok(widgets::expire_unwaited(&self.state, &widget, STOPPED_WAITING, cause).await?)
    }
}

impl Drop for GiveUp {
    fn drop(&mut self) {
        let Some(widget) = self.widget.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (state, actor, client) = (self.state.clone(), self.actor.clone(), self.client.clone());
        runtime.spawn(async move {
            let cause = Cause {
                actor: &actor,
                client: &client,
            };
            if let Err(err) =
                widgets::expire_unwaited(&state, &widget, STOPPED_WAITING, cause).await
            {
                tracing::warn!(error = %err, %widget, "a card whose hook went away stays open");
            }
        });
    }
}
