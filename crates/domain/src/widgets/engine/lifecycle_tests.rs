//! The transition guards on a real SQLite file, without HTTP: who may
//! answer which widget, that a widget leaves `pending` once and for all,
//! and what each way out records (prompt, audit row, notices).

use secrecy::SecretString;
use serde_json::json;
use std::sync::atomic::Ordering;

use super::*;
use crate::auth::{self, Role};
use crate::db::WriteTx;
use crate::notify::{Change, Notifier, Notifiers};
use crate::testing::TestDb;
use crate::widgets::engine::create::{MAX_PENDING_PER_SESSION, create};
use crate::widgets::engine::kind::Request;
use crate::widgets::engine::life::Life;
use crate::widgets::engine::row::Created;
use crate::widgets::kinds::approval::Approval;
use crate::widgets::kinds::approval::RequestApprovalInput;
use crate::widgets::kinds::ask::AskUser;
use crate::widgets::kinds::ask::AskUserInput;
use crate::widgets::kinds::env_vars::EnvVars;

use crate::{Core, Settings};

struct Fixture {
    t: TestDb,
    state: std::sync::Arc<Core>,
}

impl Fixture {
    async fn new() -> Self {
        Self::with_notifiers(Notifiers::default()).await
    }

    async fn with_notifiers(notifiers: Notifiers) -> Self {
        let t = TestDb::new().await;
        let keyring = {
            let mut conn = t.conn().await;
            let keyring = t.keyring(&mut conn).await;
            keyring.rotate(&mut conn).await.unwrap();
            keyring
        };
        let state = Core::new(t.db.clone(), keyring, Settings::new("http://127.0.0.1:1"))
            .with_notifiers(notifiers);
        Self {
            t,
            state: std::sync::Arc::new(state),
        }
    }

    fn alice(&self) -> &UserId {
        &self.t.alice.id
    }

    fn session(&self) -> &SessionId {
        &self.t.session
    }

    /// A pending question of the fixture's session, waiting `ttl_ms` when given.
    async fn question(&self, ttl_ms: Option<i64>) -> WidgetId {
        let life = Life {
            expires_in_ms: ttl_ms,
            replaces: None,
        };
        let params = which_database();
        let created = crate::widgets::create_living::<AskUser>(
            &self.state,
            self.session(),
            params,
            &life,
            system(),
        )
        .await
        .unwrap();
        assert_eq!(created.status, WidgetStatus::Pending);
        created.widget_id
    }

    /// A pending approval of the fixture's session.
    async fn approval(&self) -> WidgetId {
        let input: RequestApprovalInput = serde_json::from_value(json!({
            "tool": "Bash",
            "input": { "command": "ls" },
            "reason": "look around",
        }))
        .unwrap();
        let params = Approval::parse(input).unwrap();
        crate::widgets::create::<Approval>(&self.state, self.session(), params, system())
            .await
            .unwrap()
            .widget_id
    }

    async fn widget(&self, id: &WidgetId) -> WidgetRow {
        let mut conn = self.state.db.read.acquire().await.unwrap();
        crate::widgets::engine::read::get_widget(&mut conn, id)
            .await
            .unwrap()
    }

    /// The session's audit rows, oldest first.
    async fn audit_rows(&self) -> Vec<audit::AuditRow> {
        let mut conn = self.state.db.read.acquire().await.unwrap();
        audit::list(&mut conn, None, Some(self.session().as_str()))
            .await
            .unwrap()
    }

    /// The actions of the session's audit rows about widget `id`.
    async fn audit_actions(&self, id: &WidgetId) -> Vec<String> {
        self.audit_rows()
            .await
            .into_iter()
            .filter(|row| row.widget_id.as_deref() == Some(id.as_str()))
            .map(|row| row.action)
            .collect()
    }

    /// What the recording notifiers were told, in order (see `Recorder`).
    async fn told(&self) -> Vec<String> {
        let mut conn = self.state.db.read.acquire().await.unwrap();
        sqlx::query_scalar("SELECT text FROM told ORDER BY rowid")
            .fetch_all(&mut *conn)
            .await
            .unwrap()
    }

    /// The texts of the prompts still waiting for the agent for widget `id`.
    async fn prompts_of(&self, id: &WidgetId) -> Vec<String> {
        let mut conn = self.state.db.read.acquire().await.unwrap();
        prompts::undelivered(&mut conn, self.session())
            .await
            .unwrap()
            .into_iter()
            .filter(|p| p.widget_id.as_deref() == Some(id.as_str()))
            .map(|p| p.text)
            .collect()
    }

    /// Another user, with no access to the fixture's session.
    async fn stranger(&self) -> UserId {
        let mut tx = self.state.db.begin_write().await.unwrap();
        let password = SecretString::from("another long test password");
        let bob = auth::create_user(&mut tx, "bob", Role::Member, password)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        bob.id
    }
}

/// The params of the fixture's question.
fn which_database() -> crate::widgets::engine::kind::ParamsOf<AskUser> {
    let input: AskUserInput = serde_json::from_value(json!({ "questions": [{
        "question": "Which database?",
        "header": "Database",
        "options": [{ "label": "Postgres" }, { "label": "SQLite" }],
    }]}))
    .unwrap();
    AskUser::parse(input).unwrap()
}

fn system() -> Cause<'static> {
    static CLIENT: std::sync::LazyLock<ClientAddr> = std::sync::LazyLock::new(ClientAddr::default);
    Cause {
        actor: &Actor::System,
        client: &CLIENT,
    }
}

fn form(fields: &[(&str, &str)]) -> AnswerBody {
    AnswerBody::Form(
        fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), SecretString::from(*v)))
            .collect(),
    )
}

fn pick_postgres() -> AnswerBody {
    form(&[("answer.0", "Postgres")])
}

/// The code of a refusal, or a panic naming what came instead.
fn refusal<T: std::fmt::Debug>(result: Result<T>) -> String {
    match result {
        Err(Error::WidgetNotPending(status)) => format!("not_pending:{status}"),
        Err(Error::NotFound(what)) => format!("not_found:{what}"),
        Err(Error::Conflict { code, .. }) => code.to_owned(),
        Err(Error::Invalid { code, .. }) => code.to_owned(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A notifier that records what it is told, in its transaction (an
/// outbox row of its own), and whether it was told at all.
struct Recorder {
    targets: &'static str,
}

#[async_trait::async_trait]
impl Notifier for Recorder {
    fn targets_sql(&self) -> &'static str {
        self.targets
    }

    async fn enqueue(&self, tx: &mut WriteTx, _: &Core, change: &Change<'_>) -> Result<()> {
        assert_ne!(self.targets, "0", "told although it has nowhere to send");
        let told = format!(
            "{} {} {}",
            change.event,
            change.kind,
            change.status.as_str()
        );
        sqlx::query("INSERT INTO told (text) VALUES ($1)")
            .bind(told)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

#[tokio::test]
async fn a_question_is_answered_once_with_its_prompt_audit_row_and_notices() {
    let mut notifiers = Notifiers::default();
    notifiers.add(std::sync::Arc::new(Recorder { targets: "0" }));
    notifiers.add(std::sync::Arc::new(Recorder {
        targets: "(SELECT count(*) FROM users)",
    }));
    let f = Fixture::with_notifiers(notifiers).await;
    sqlx::query("CREATE TABLE told (text TEXT NOT NULL)")
        .execute(&mut *f.t.conn().await)
        .await
        .unwrap();
    let id = f.question(None).await;
    assert_eq!(f.told().await, ["widget.created ask_user pending"]);
    let row = f.widget(&id).await;
    let client = ClientAddr(Some("192.0.2.7".into()));
    let view = submit(
        &f.state,
        &row,
        Answerer::Person(f.alice()),
        pick_postgres(),
        &client,
    )
    .await
    .unwrap();
    assert_eq!(view.status, WidgetStatus::Submitted);
    assert_eq!(
        view.result.unwrap()["answers"]["Which database?"],
        "Postgres"
    );
    assert_eq!(f.widget(&id).await.status, WidgetStatus::Submitted);
    assert_eq!(
        f.audit_actions(&id).await,
        ["widget.create", "widget.submit"]
    );
    let prompts = f.prompts_of(&id).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert!(prompts[0].contains("Postgres"), "{prompts:?}");
    assert_eq!(
        f.told().await,
        [
            "widget.created ask_user pending",
            "widget.resolved ask_user submitted"
        ]
    );

    // A second answer, and a dismissal, find it settled and change nothing.
    let again = submit(
        &f.state,
        &row,
        Answerer::Person(f.alice()),
        pick_postgres(),
        &client,
    )
    .await;
    assert_eq!(refusal(again), "not_pending:submitted");
    let dismissed = dismiss_widget(&f.state, &id, f.alice(), None, &client).await;
    assert_eq!(refusal(dismissed), "not_pending:submitted");
    assert_eq!(
        f.audit_actions(&id).await,
        ["widget.create", "widget.submit"]
    );
    assert_eq!(f.prompts_of(&id).await.len(), 1);
}

#[tokio::test]
async fn a_person_without_access_finds_no_widget_to_answer_or_dismiss() {
    let f = Fixture::new().await;
    let id = f.question(None).await;
    let bob = f.stranger().await;
    let row = f.widget(&id).await;
    let client = ClientAddr::default();
    let answered = submit(
        &f.state,
        &row,
        Answerer::Person(&bob),
        pick_postgres(),
        &client,
    )
    .await;
    assert_eq!(refusal(answered), "not_found:widget");
    let dismissed = dismiss_widget(&f.state, &id, &bob, Some("no".into()), &client).await;
    assert_eq!(refusal(dismissed), "not_found:widget");
    assert_eq!(f.widget(&id).await.status, WidgetStatus::Pending);
    assert_eq!(f.audit_actions(&id).await, ["widget.create"]);
}

#[tokio::test]
async fn a_widget_past_its_time_is_refused_as_expired_before_the_sweep() {
    let f = Fixture::new().await;
    let id = f.question(Some(1)).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let row = f.widget(&id).await;
    let client = ClientAddr::default();
    let by_person = submit(
        &f.state,
        &row,
        Answerer::Person(f.alice()),
        pick_postgres(),
        &client,
    );
    assert_eq!(refusal(by_person.await), "not_pending:expired");
    let by_agent = Answerer::AgentClient(f.session());
    let by_agent = submit(&f.state, &row, by_agent, pick_postgres(), &client).await;
    assert_eq!(refusal(by_agent), "not_pending:expired");
    let dismissed = dismiss_widget(&f.state, &id, f.alice(), None, &client).await;
    assert_eq!(refusal(dismissed), "not_pending:expired");
    assert_eq!(
        f.widget(&id).await.status,
        WidgetStatus::Pending,
        "not swept yet"
    );
}

#[tokio::test]
async fn the_agents_client_answers_only_questions_of_its_own_live_session() {
    let f = Fixture::new().await;
    let client = ClientAddr::default();
    let other = {
        let mut tx = f.state.db.begin_write().await.unwrap();
        let other = sessions::create_session(&mut tx, f.alice(), "other".into())
            .await
            .unwrap()
            .session
            .id;
        tx.commit().await.unwrap();
        other
    };

    // Another session's client does not find it.
    let id = f.question(None).await;
    let row = f.widget(&id).await;
    let elsewhere = submit(
        &f.state,
        &row,
        Answerer::AgentClient(&other),
        pick_postgres(),
        &client,
    );
    assert_eq!(refusal(elsewhere.await), "not_found:widget");

    // An approval is the person's alone, whoever's client asks.
    let approval = f.approval().await;
    let approval_row = f.widget(&approval).await;
    for by in [
        Answerer::AgentClient(f.session()),
        Answerer::AgentApp(f.session()),
    ] {
        let answered = submit(
            &f.state,
            &approval_row,
            by,
            form(&[("decision", "once")]),
            &client,
        );
        assert_eq!(refusal(answered.await), "not_answerable_here");
    }
    let view = submit(
        &f.state,
        &approval_row,
        Answerer::Person(f.alice()),
        form(&[("decision", "once")]),
        &client,
    )
    .await
    .unwrap();
    assert_eq!(view.status, WidgetStatus::Submitted);

    // Its own session's client answers a question, recorded as itself.
    let view = submit(
        &f.state,
        &row,
        Answerer::AgentClient(f.session()),
        pick_postgres(),
        &client,
    )
    .await
    .unwrap();
    assert_eq!(view.status, WidgetStatus::Submitted);
    let again = submit(
        &f.state,
        &row,
        Answerer::AgentApp(f.session()),
        pick_postgres(),
        &client,
    );
    assert_eq!(refusal(again.await), "not_pending:submitted");
    let rows = f.audit_rows().await;
    let submit_row = rows
        .iter()
        .find(|r| r.widget_id.as_deref() == Some(id.as_str()) && r.action == "widget.submit")
        .expect("an audit row for the answer");
    assert_eq!(submit_row.actor, format!("mcp-client:{}", f.session()));

    // Once the session is archived, its client answers nothing.
    let pending = f.question(None).await;
    let pending_row = f.widget(&pending).await;
    archive_session(&f.state, f.session(), system())
        .await
        .unwrap();
    let archived = submit(
        &f.state,
        &pending_row,
        Answerer::AgentClient(f.session()),
        pick_postgres(),
        &client,
    );
    assert_eq!(refusal(archived.await), "session_archived");
    let mut conn = f.state.db.read.acquire().await.unwrap();
    let session = sessions::get_session(&mut conn, f.session()).await.unwrap();
    drop(conn);
    assert!(matches!(
        live(session),
        Err(Error::Conflict {
            code: "session_archived",
            ..
        })
    ));
}

#[tokio::test]
async fn a_dismissal_keeps_its_note_for_the_agent_and_is_audited() {
    let f = Fixture::new().await;
    let id = f.question(None).await;
    let client = ClientAddr::default();
    let view = dismiss_widget(
        &f.state,
        &id,
        f.alice(),
        Some("ask me tomorrow".into()),
        &client,
    )
    .await
    .unwrap();
    assert_eq!(view.status, WidgetStatus::Dismissed);
    let result = view.result.unwrap();
    assert_eq!(result["note"], "ask me tomorrow");
    assert_eq!(result["dismissed_by"], "alice");
    assert_eq!(
        f.audit_actions(&id).await,
        ["widget.create", "widget.dismiss"]
    );
    let prompts = f.prompts_of(&id).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert!(prompts[0].contains("ask me tomorrow"), "{prompts:?}");
}

#[tokio::test]
async fn the_sweep_expires_exactly_the_widgets_past_their_time_and_counts_them() {
    let f = Fixture::new().await;
    let due = [f.question(Some(1)).await, f.question(Some(1)).await];
    let waiting = f.question(None).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_eq!(expire_due(&f.state).await.unwrap(), 2);
    for id in &due {
        assert_eq!(f.widget(id).await.status, WidgetStatus::Expired);
        assert_eq!(
            f.audit_actions(id).await,
            ["widget.create", "widget.expire"]
        );
        assert_eq!(f.prompts_of(id).await.len(), 1);
    }
    assert_eq!(f.widget(&waiting).await.status, WidgetStatus::Pending);
    assert_eq!(expire_due(&f.state).await.unwrap(), 0);
}

#[tokio::test]
async fn a_caller_that_stopped_waiting_expires_the_widget_unless_it_was_answered_first() {
    let f = Fixture::new().await;
    let id = f.question(None).await;
    let ended = expire_unwaited(&f.state, &id, "hook_timeout", system())
        .await
        .unwrap();
    assert!(ended.is_none(), "{ended:?}");
    let row = f.widget(&id).await;
    assert_eq!(row.status, WidgetStatus::Expired);
    let result: Value = serde_json::from_str(row.result.as_deref().unwrap()).unwrap();
    assert_eq!(result["ended_because"], "hook_timeout");
    assert_eq!(
        f.audit_actions(&id).await,
        ["widget.create", "widget.expire"]
    );
    assert!(
        f.prompts_of(&id).await.is_empty(),
        "the caller told the agent already"
    );

    let answered = f.question(None).await;
    let row = f.widget(&answered).await;
    let client = ClientAddr::default();
    submit(
        &f.state,
        &row,
        Answerer::Person(f.alice()),
        pick_postgres(),
        &client,
    )
    .await
    .unwrap();
    let view = expire_unwaited(&f.state, &answered, "hook_timeout", system())
        .await
        .unwrap()
        .expect("the answer given first");
    assert_eq!(view.status, WidgetStatus::Submitted);
    assert_eq!(f.widget(&answered).await.status, WidgetStatus::Submitted);
    assert_eq!(f.prompts_of(&answered).await.len(), 1);
}

#[tokio::test]
async fn archiving_cancels_every_pending_widget_and_counts_them() {
    let f = Fixture::new().await;
    let pending = [f.question(None).await, f.question(None).await];
    let answered = f.question(None).await;
    let row = f.widget(&answered).await;
    let client = ClientAddr::default();
    submit(
        &f.state,
        &row,
        Answerer::Person(f.alice()),
        pick_postgres(),
        &client,
    )
    .await
    .unwrap();
    assert_eq!(
        archive_session(&f.state, f.session(), system())
            .await
            .unwrap(),
        2
    );
    for id in &pending {
        assert_eq!(f.widget(id).await.status, WidgetStatus::Cancelled);
        assert_eq!(
            f.audit_actions(id).await,
            ["widget.create", "widget.cancel"]
        );
        assert_eq!(f.prompts_of(id).await.len(), 1);
    }
    assert_eq!(f.widget(&answered).await.status, WidgetStatus::Submitted);
    let rows = f.audit_rows().await;
    let archived: Vec<_> = rows
        .iter()
        .filter(|r| r.action == "session.archive")
        .collect();
    assert_eq!(archived.len(), 1, "one audit row for the archiving");
    // Idempotent: nothing left to cancel.
    assert_eq!(
        archive_session(&f.state, f.session(), system())
            .await
            .unwrap(),
        0
    );
}

/// Two people answer at once: the one refused is told so only once the
/// answer that won is on disk, so that the page it loads next shows it.
#[tokio::test]
async fn a_refused_answer_returns_once_the_winning_answer_is_committed() {
    let f = Fixture::new().await;
    for round in 0..5 {
        let id = f.question(None).await;
        let row = f.widget(&id).await;
        let answer_then_read = || async {
            let client = ClientAddr::default();
            let by = Answerer::Person(f.alice());
            let answered = submit(&f.state, &row, by, pick_postgres(), &client).await;
            let seen = f.widget(&id).await.status;
            (answered.map(|v| v.status), seen)
        };
        let (one, two) = tokio::join!(answer_then_read(), answer_then_read());
        let mut refused = 0;
        for (answered, seen) in [one, two] {
            match answered {
                Ok(status) => assert_eq!(status, WidgetStatus::Submitted),
                Err(err) => {
                    assert_eq!(refusal::<()>(Err(err)), "not_pending:submitted");
                    assert_eq!(
                        seen,
                        WidgetStatus::Submitted,
                        "round {round}: read after the refusal"
                    );
                    refused += 1;
                }
            }
        }
        assert_eq!(refused, 1, "round {round}: one answer wins");
    }
}

#[tokio::test]
async fn an_answer_reads_the_widget_with_its_session_and_the_persons_name_in_one() {
    let f = Fixture::new().await;
    let id = f.question(None).await;
    let mut conn = f.t.conn().await;
    let session = f.session();
    sessions::set_sharing(&mut conn, session, sessions::Sharing::Prompt, &[])
        .await
        .unwrap();
    sessions::mark_archived(&mut conn, session, 1_234)
        .await
        .unwrap();
    let read = store::for_answer(&mut conn, &id, Some(f.alice()))
        .await
        .unwrap()
        .unwrap();
    let alone = sessions::get_session(&mut conn, session).await.unwrap();
    assert_eq!(read.widget.id, id);
    assert_eq!(
        serde_json::to_value(&read.session).unwrap(),
        serde_json::to_value(&alone).unwrap()
    );
    assert_eq!(read.session.archived_at, Some(1_234));
    assert_eq!(read.session.others_can, sessions::Sharing::Prompt);
    assert_eq!(read.person_name.as_deref(), Some("alice"));
    let by_agent = store::for_answer(&mut conn, &id, None).await.unwrap();
    assert_eq!(by_agent.unwrap().person_name, None);
    let missing = WidgetId::generate();
    let none = store::for_answer(&mut conn, &missing, Some(f.alice()))
        .await
        .unwrap();
    assert!(none.is_none());
}

/// With another write waiting, an answer's last statement (its prompt,
/// event and audit row) also ends its savepoint in the write batch
/// (`resolution::settle`). An answer abandoned at any point, before, during
/// or after that statement, stands whole or not at all: the widget is
/// submitted with one prompt, one `widget:resolved` event and one audit
/// row, or pending with none; and the chain the writer remembers goes on
/// from the row that is really last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_answer_stands_whole_or_not_at_all() {
    let f = Fixture::new().await;
    let db = f.state.db.clone();
    let mut ids = Vec::new();
    for round in 0..60u64 {
        let id = f.question(None).await;
        let row = f.widget(&id).await;
        ids.push(id);
        // Held, so that the answer queues first and the next write behind it.
        let ahead = db.begin_write().await.unwrap();
        let state = f.state.clone();
        let alice = f.alice().clone();
        let answer = tokio::spawn(async move {
            let by = Answerer::Person(&alice);
            submit(&state, &row, by, pick_postgres(), &ClientAddr::default()).await
        });
        writes_queued(&db, 1).await;
        let behind = tokio::spawn({
            let db = db.clone();
            async move { db.begin_write().await.unwrap() }
        });
        writes_queued(&db, 2).await;
        // Its batch commits once the answer and the write behind it are done.
        let ahead = tokio::spawn(ahead.commit());
        // Given up 0 to 14 ms in: from before its first statement to after
        // its last.
        std::thread::sleep(std::time::Duration::from_micros(round * round * 4));
        answer.abort();
        let _ = answer.await;
        let behind = tokio::time::timeout(std::time::Duration::from_secs(10), behind);
        let behind = behind
            .await
            .expect("the write behind the answer got the writer");
        behind.unwrap().commit().await.unwrap();
        ahead.await.unwrap().unwrap();
    }

    let mut stood = 0;
    for id in &ids {
        let status = f.widget(id).await.status;
        let audit = f.audit_actions(id).await;
        let prompts = f.prompts_of(id).await.len();
        let events = {
            let mut conn = f.state.db.read.acquire().await.unwrap();
            crate::events::since(&mut conn, f.session(), 0, 10_000)
                .await
                .unwrap()
                .into_iter()
                .filter(|e| e.kind == "widget:resolved" && e.payload.contains(id.as_str()))
                .count()
        };
        match status {
            WidgetStatus::Submitted => {
                stood += 1;
                assert_eq!(audit, ["widget.create", "widget.submit"], "{id}");
                assert_eq!((prompts, events), (1, 1), "{id}");
            }
            WidgetStatus::Pending => {
                assert_eq!(audit, ["widget.create"], "{id}");
                assert_eq!((prompts, events), (0, 0), "{id}");
            }
            other => panic!("{id} is {other:?}"),
        }
    }
    eprintln!("{stood} of {} abandoned answers stood", ids.len());
    assert!(
        stood > 0,
        "no abandoned answer stood; the test proved nothing"
    );
    assert!(
        stood < ids.len(),
        "every abandoned answer stood; the test proved nothing"
    );
    // What was undone is answered again, and the chain verifies.
    for id in &ids {
        let row = f.widget(id).await;
        if row.status == WidgetStatus::Pending {
            let by = Answerer::Person(f.alice());
            submit(&f.state, &row, by, pick_postgres(), &ClientAddr::default())
                .await
                .unwrap();
        }
    }
    let mut conn = f.state.db.read.acquire().await.unwrap();
    let verified = audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

/// Waits until `n` writes wait for `db`'s writer.
async fn writes_queued(db: &crate::db::Db, n: usize) {
    let waited = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while db.queued_writes() < n {
            tokio::time::sleep(std::time::Duration::from_micros(200)).await;
        }
    });
    waited
        .await
        .unwrap_or_else(|_| panic!("{n} writes never queued"));
}

/// `creations` of one kind, started while the test holds the writer (and
/// another write waits for it), each on the guess (`optimistic`); `change`
/// then runs in the held transaction, before any of them writes. Returns
/// their outcomes and how many guesses the guards refused or saw
/// superseded (not run: a guess before them was refused, `db::pipe`).
async fn created_after<R: Request>(
    f: &Fixture,
    creations: usize,
    params: fn() -> crate::widgets::engine::kind::ParamsOf<R>,
    change: &str,
) -> (Vec<Result<Created>>, u64) {
    let db = f.state.db.clone();
    let superseded = || crate::db::stats::WRITES.superseded.load(Ordering::SeqCst);
    let (_, refused_before) = crate::widgets::engine::store::guess::counts();
    let superseded_before = superseded();
    let mut held = db.begin_write().await.unwrap();
    let behind = tokio::spawn({
        let db = db.clone();
        async move { db.begin_write().await.unwrap() }
    });
    writes_queued(&db, 1).await;
    let mut tasks = Vec::new();
    for i in 0..creations {
        let (state, session) = (f.state.clone(), f.session().clone());
        tasks.push(tokio::spawn(async move {
            create::<R>(&state, &session, params(), system()).await
        }));
        writes_queued(&db, 2 + i).await;
    }
    sqlx::query(change)
        .bind(f.session())
        .execute(&mut *held)
        .await
        .unwrap();
    let held = tokio::spawn(held.commit());
    behind.await.unwrap().commit().await.unwrap();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    held.await.unwrap().unwrap();
    let (_, refused_after) = crate::widgets::engine::store::guess::counts();
    let superseded = superseded() - superseded_before;
    (outcomes, refused_after - refused_before + superseded)
}

/// A creation that guessed its session live, archived in the batch it then
/// joins, is refused as archived and writes nothing: its guard refuses the
/// guess, and it is made again with its read inside the writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_whose_session_was_archived_before_its_turn_writes_nothing() {
    let f = Fixture::new().await;
    let archive = "UPDATE sessions SET archived_at = 1 WHERE id = $1";
    let (mut outcomes, refused) = created_after::<AskUser>(&f, 1, which_database, archive).await;
    assert_eq!(refusal(outcomes.remove(0)), "session_archived");
    assert!(refused >= 1, "the guard refused the guess");
    let widgets: i64 = sqlx::query_scalar("SELECT count(*) FROM widgets WHERE session_id = $1")
        .bind(f.session())
        .fetch_one(&f.state.db.read)
        .await
        .unwrap();
    assert_eq!(widgets, 0);
    let actions: Vec<String> = f.audit_rows().await.into_iter().map(|r| r.action).collect();
    assert!(
        !actions.contains(&"widget.create".to_owned()),
        "{actions:?}"
    );
}

/// Creations that all guess there is room under the pending cap cannot
/// pass it together: each one's guard counts in the batch, so exactly the
/// room left is filled and the rest are refused `too_many_pending`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_queued_together_stop_at_the_pending_cap() {
    let f = Fixture::new().await;
    for _ in 0..MAX_PENDING_PER_SESSION - 2 {
        f.question(None).await;
    }
    let touch = "UPDATE sessions SET title = title WHERE id = $1";
    let (outcomes, refused) = created_after::<AskUser>(&f, 5, which_database, touch).await;
    let made = outcomes.iter().filter(|o| o.is_ok()).count();
    let codes: Vec<String> = outcomes
        .into_iter()
        .filter(|o| o.is_err())
        .map(refusal)
        .collect();
    assert_eq!(made, 2, "two fit under the cap");
    assert_eq!(codes, ["too_many_pending"; 3]);
    assert!(
        refused >= 3,
        "the guards refused the guesses past the cap, or those were superseded"
    );
    let pending: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM widgets WHERE session_id = $1 AND status = 'pending'",
    )
    .bind(f.session())
    .fetch_one(&f.state.db.read)
    .await
    .unwrap();
    assert_eq!(pending, MAX_PENDING_PER_SESSION);
    let mut conn = f.state.db.read.acquire().await.unwrap();
    let verified = crate::audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "the audit chain verifies");
}

/// A request for a value stored in the batch it joins, before its turn, is
/// born `already_present`, as it would be had it read in the writer: its
/// guard checks whether every name it asks for is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_value_stored_before_its_turn_is_born_already_present() {
    let f = Fixture::new().await;
    fn guard_key() -> crate::widgets::engine::kind::ParamsOf<EnvVars> {
        let input = serde_json::from_value(json!({
            "names": ["GUARD_KEY"], "reason": "to call the API",
        }));
        EnvVars::parse(input.unwrap()).unwrap()
    }
    // A row that only names the value: the guard reads names alone.
    let store = "INSERT INTO env_vars \
         (owner_id, scope, name, key_id, nonce, ciphertext, updated_at, updated_by) \
         SELECT creator_id, 'global', 'GUARD_KEY', (SELECT max(key_id) FROM keyring), \
         x'00', x'00', 0, creator_id FROM sessions WHERE id = $1";
    let (mut outcomes, refused) = created_after::<EnvVars>(&f, 1, guard_key, store).await;
    let created = outcomes.remove(0).unwrap();
    assert_eq!(created.status, WidgetStatus::AlreadyPresent);
    assert!(refused >= 1, "the guard refused the guess");
}
