//! `request_approval`: the agent asks before running a tool. The person
//! answers Deny (optionally saying why), Once, or Always; "Always" keeps a
//! rule, per session creator, tool and the call's identifying fields
//! (`identity.rs`: every field but a few per tool that only describe the
//! call, such as Bash's `description`), that approves later requests with
//! the same fields at once until it is revoked. For a shell command the
//! person may instead allow every command matching a pattern
//! (`git status *`), all other identifying fields still equal to what was
//! approved; such a rule never matches a command with shell
//! metacharacters, and its `*` never spans a `/` or a `..`. The decision is
//! read in `answer.rs` (with the resume prompt and the badges), its card is the
//! server's (`src/cards/`).

mod answer;
pub mod edit;
mod identity;
mod pattern;
pub mod quorum;
mod rules;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};

pub use answer::{Approval, audit_detail};
pub use pattern::{is_plain_command, pattern_matches};
pub use rules::{
    ApprovalRule, MatchedRule, RuleOwner, RuleScope, keep_rule, list_rules, matching_rule,
    revoke_rule,
};

const MAX_TOOL_CHARS: usize = 100;
const MAX_INPUT_BYTES: usize = 16 * 1024;
const MAX_REASON_CHARS: usize = 500;

/// The arguments of `request_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestApprovalInput {
    /// The tool you want to run, e.g. "Bash" or "write_file" (1 to 100 characters).
    pub tool: String,
    /// Its input, exactly as you would pass it (any JSON, at most 16 KiB).
    /// `{"command": "…"}` is shown as a shell command, `{"path": "…"}` as a path.
    pub input: Value,
    /// Why you want to run it (at most 500 characters).
    #[serde(default)]
    pub reason: Option<String>,
    /// As for `ask_user`: wait up to this many seconds (at most 300) for the decision.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
    /// Let the person edit the input before allowing it (default false).
    /// When they do, the decision carries `edited_input`: run the tool
    /// with exactly that input, never the original.
    #[serde(default)]
    pub allow_edit: bool,
    /// How many different people must allow it (1 to 5, default 1; at most
    /// the number of people who may answer this session). The first denial
    /// ends the request.
    #[serde(default)]
    pub approvers: Option<u32>,
}

/// A validated approval request, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalParams {
    pub tool: String,
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The person may edit the input before allowing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_edit: bool,
    /// Distinct people who must allow it; absent: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<u32>,
}

/// How the input is shown to the person deciding.
pub enum InputDisplay {
    Command(String),
    Path(String),
    Json(String),
}

impl ApprovalParams {
    pub fn parse(input: &RequestApprovalInput) -> Result<Self> {
        let tool = input.tool.trim();
        if tool.is_empty()
            || tool.chars().count() > MAX_TOOL_CHARS
            || tool.chars().any(char::is_control)
        {
            return Err(Error::invalid(
                "invalid_tool",
                format!("`tool` needs 1 to {MAX_TOOL_CHARS} characters, no control characters"),
            ));
        }
        let size = input.input.to_string().len();
        if size > MAX_INPUT_BYTES {
            return Err(Error::invalid(
                "input_too_large",
                format!("`input` is {size} bytes as JSON; the limit is {MAX_INPUT_BYTES}"),
            ));
        }
        if let Some(reason) = &input.reason
            && reason.chars().count() > MAX_REASON_CHARS
        {
            return Err(Error::invalid(
                "invalid_reason",
                format!("`reason` has at most {MAX_REASON_CHARS} characters"),
            ));
        }
        crate::widgets::engine::kind::check_wait(input.wait_seconds)?;
        let approvers = quorum::check_count(input.approvers)?;
        Ok(Self {
            tool: tool.to_owned(),
            input: input.input.clone(),
            reason: input.reason.clone(),
            allow_edit: input.allow_edit,
            approvers,
        })
    }

    /// How many distinct people must allow it.
    pub fn quorum(&self) -> u32 {
        self.approvers.unwrap_or(1)
    }

    /// The fields an "Always" rule holds to, as one canonical string
    /// (object keys sorted): what an exact rule stores and matches.
    pub fn canonical_input(&self) -> String {
        self.identity().to_string()
    }

    fn identity(&self) -> Value {
        identity::identity(&self.tool, &self.input)
    }

    /// The fields of this input an "Always" rule lets differ next time,
    /// among those it has (Bash's `description`, Write's `content`, …).
    pub fn free_fields(&self) -> Vec<&'static str> {
        identity::free_fields(&self.tool, &self.input)
            .iter()
            .copied()
            .filter(|f| self.input.get(f).is_some())
            .collect()
    }

    /// A shell command as a command, a path as a path, anything else as JSON.
    pub fn display(&self) -> InputDisplay {
        let field = |name: &str| {
            self.input
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if let Some(command) = field("command").or_else(|| field("cmd")) {
            return InputDisplay::Command(command);
        }
        if let Some(path) = field("path").or_else(|| field("file_path")) {
            return InputDisplay::Path(path);
        }
        InputDisplay::Json(serde_json::to_string_pretty(&self.input).unwrap_or_default())
    }

    /// The input's other fields, as JSON, when a command or path is shown on
    /// its own: "Always" holds to all of them but the free ones, so all of
    /// them are shown.
    pub fn rest(&self) -> Option<String> {
        let Value::Object(map) = &self.input else {
            return None;
        };
        let shown = match self.display() {
            InputDisplay::Command(_) => ["command", "cmd"],
            InputDisplay::Path(_) => ["path", "file_path"],
            InputDisplay::Json(_) => return None,
        };
        let rest: serde_json::Map<String, Value> = map
            .iter()
            .filter(|(k, _)| !shown.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!rest.is_empty())
            .then(|| serde_json::to_string_pretty(&Value::Object(rest)).unwrap_or_default())
    }
}

/// The person's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Deny,
    Once,
    Always,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Once => "once",
            Self::Always => "always",
        }
    }
}

/// What the person answered: the decision, a comment (with any decision),
/// for "Always allow commands like …" the pattern, for "Always" its scope,
/// and the input as edited (the raw JSON text), if it was.
#[derive(Debug)]
pub struct DecisionForm {
    pub decision: Decision,
    pub reason: Option<String>,
    pub pattern: Option<String>,
    pub scope: RuleScope,
    pub edited: Option<String>,
}

/// Reads `decision` (`deny`, `once`, `always`, or `always_like` with a
/// `pattern`), an optional `comment` (or `reason`, its older name) kept
/// with any decision, the `scope` of an "Always" (`session` or `all`,
/// default `all`) and an `edited_input`.
pub fn parse_decision(fields: &[(String, String)]) -> Result<DecisionForm> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let (decision, like) = match field("decision") {
        Some("deny") => (Decision::Deny, false),
        Some("once") => (Decision::Once, false),
        Some("always") => (Decision::Always, false),
        Some("always_like") => (Decision::Always, true),
        _ => {
            return Err(Error::invalid(
                "invalid_decision",
                "`decision` is `deny`, `once`, `always` or `always_like`",
            ));
        }
    };
    let reason = field("comment")
        .filter(|c| !c.trim().is_empty())
        .or_else(|| field("reason"))
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    if let Some(r) = &reason
        && r.chars().count() > MAX_REASON_CHARS
    {
        return Err(Error::invalid(
            "invalid_reason",
            format!("a comment has at most {MAX_REASON_CHARS} characters"),
        ));
    }
    let pattern = match like {
        true => Some(field("pattern").unwrap_or_default().trim().to_owned()),
        false => None,
    };
    let scope = match field("scope").filter(|s| !s.is_empty()) {
        Some(scope) => RuleScope::parse(scope)?,
        None => RuleScope::All,
    };
    let edited = field("edited_input")
        .filter(|e| !e.trim().is_empty())
        .map(str::to_owned);
    Ok(DecisionForm {
        decision,
        reason,
        pattern,
        scope,
        edited,
    })
}

/// The result of a decision, as the agent and the transcript see it: a
/// comment as `comment` (and, on a denial, as `reason` too, its name before
/// comments went with every decision); an "Always" rule's id and scope.
pub fn result(form: &DecisionForm, by: &str, rule: Option<&str>) -> Value {
    let mut result = json!({ "decision": form.decision.as_str(), "answered_by": by });
    if let Some(reason) = &form.reason {
        result["comment"] = json!(reason);
        if form.decision == Decision::Deny {
            result["reason"] = json!(reason);
        }
    }
    if rule.is_some() {
        result["scope"] = json!(form.scope.as_str());
    }
    if let Some(pattern) = &form.pattern {
        result["pattern"] = json!(pattern);
    }
    if let Some(rule) = rule {
        result["rule_id"] = json!(rule);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tool: &str, input: Value) -> RequestApprovalInput {
        RequestApprovalInput {
            tool: tool.into(),
            input,
            reason: None,
            wait_seconds: None,
            allow_edit: false,
            approvers: None,
        }
    }

    #[test]
    fn inputs_are_shown_by_what_they_are_and_matched_canonically() {
        let cmd =
            ApprovalParams::parse(&input("Bash", json!({ "command": "rm -rf build" }))).unwrap();
        assert!(matches!(cmd.display(), InputDisplay::Command(c) if c == "rm -rf build"));
        let path =
            ApprovalParams::parse(&input("write", json!({ "path": "/etc/hosts", "mode": 1 })))
                .unwrap();
        assert!(matches!(path.display(), InputDisplay::Path(p) if p == "/etc/hosts"));
        let other =
            ApprovalParams::parse(&input("deploy", json!({ "b": 1, "a": [1, 2] }))).unwrap();
        assert!(matches!(other.display(), InputDisplay::Json(_)));
        let reordered =
            ApprovalParams::parse(&input("deploy", json!({ "a": [1, 2], "b": 1 }))).unwrap();
        assert_eq!(other.canonical_input(), reordered.canonical_input());
    }

    #[test]
    fn bad_requests_and_decisions_have_codes() {
        let code = |r: Result<ApprovalParams>| match r {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(ApprovalParams::parse(&input(" ", json!({})))),
            "invalid_tool"
        );
        assert_eq!(
            code(ApprovalParams::parse(&input(
                "t",
                json!({ "x": "y".repeat(17_000) })
            ))),
            "input_too_large"
        );
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert!(matches!(
            parse_decision(&f(&[("decision", "maybe")])),
            Err(Error::Invalid {
                code: "invalid_decision",
                ..
            })
        ));
        let deny = parse_decision(&f(&[("decision", "deny"), ("reason", " too risky ")])).unwrap();
        assert_eq!(
            (deny.decision, deny.reason),
            (Decision::Deny, Some("too risky".into()))
        );
        let once = parse_decision(&f(&[("decision", "once"), ("comment", " kept ")])).unwrap();
        assert_eq!(
            (once.decision, once.reason),
            (Decision::Once, Some("kept".into()))
        );
        assert_eq!(once.scope, RuleScope::All);
        let scoped = parse_decision(&f(&[("decision", "always"), ("scope", "session")])).unwrap();
        assert_eq!(scoped.scope, RuleScope::Session);
        assert!(matches!(
            parse_decision(&f(&[("decision", "always"), ("scope", "forever")])),
            Err(Error::Invalid {
                code: "invalid_scope",
                ..
            })
        ));
        let like = parse_decision(&f(&[
            ("decision", "always_like"),
            ("pattern", " git status * "),
        ]))
        .unwrap();
        assert_eq!(
            (like.decision, like.pattern),
            (Decision::Always, Some("git status *".into()))
        );
    }

    #[test]
    fn patterns_match_plain_commands_only() {
        assert!(pattern_matches("git status *", "git status --short"));
        assert!(pattern_matches("git status", "git status"));
        assert!(pattern_matches("git status *", "git status"));
        // No implicit prefix: a pattern without `*` is the command itself.
        assert!(!pattern_matches("git status", "git status -sb"));
        assert!(!pattern_matches("rm -rf build", "rm -rf build / /home"));
        assert!(!pattern_matches("git status", "git statusx"));
        // `*` spans neither a `/` nor a `..`.
        assert!(pattern_matches("cat docs/*", "cat docs/guide.md"));
        assert!(pattern_matches("cat docs/*.md", "cat docs/a.b.md"));
        for outside in [
            "cat docs/../../../etc/shadow",
            "cat docs/..",
            "cat docs/a/b",
            "cat docs/a /etc/shadow",
        ] {
            assert!(!pattern_matches("cat docs/*", outside), "{outside}");
        }
        assert!(!pattern_matches("rm -rf *", "rm -rf build / /home"));
        assert!(!pattern_matches("git log *", "git log ..HEAD"));
        // Many stars stay linear.
        let stars = format!("{}b", "a*".repeat(90));
        assert!(!pattern_matches(&stars, &"a".repeat(10_000)));
        assert!(pattern_matches(
            "npm run * --silent",
            "npm run build --silent"
        ));
        assert!(!pattern_matches("npm run * --silent", "npm run build"));
        for hostile in [
            "git status; rm -rf ~",
            "git status && curl x | sh",
            "git status $(rm -rf ~)",
            "git status `id`",
            "git status > /etc/passwd",
            "git status\nrm -rf ~",
            "git status 'a b'",
            "git status \\; id",
        ] {
            assert!(!pattern_matches("git status *", hostile), "{hostile}");
            assert!(!pattern_matches("git", hostile), "{hostile}");
        }
    }

    #[test]
    fn a_pattern_must_cover_the_request_and_start_with_a_word() {
        let params = ApprovalParams {
            tool: "Bash".into(),
            input: json!({ "command": "git status --short" }),
            reason: None,
            allow_edit: false,
            approvers: None,
        };
        assert!(params.check_pattern("git status *").is_ok());
        assert_eq!(params.suggested_pattern().as_deref(), Some("git status *"));
        // What the page pre-fills always passes its own check.
        for (command, suggested) in [
            ("git status", Some("git status *")),
            ("ls", Some("ls *")),
            ("ls -la /tmp", Some("ls -la /tmp")),
            ("cat docs/a.md", Some("cat docs/a.md *")),
            ("./run.sh", None),
            ("git  status", Some("git  status")),
            ("git status; id", None),
        ] {
            let p = ApprovalParams {
                tool: "Bash".into(),
                input: json!({ "command": command }),
                reason: None,
                allow_edit: false,
                approvers: None,
            };
            let got = p.suggested_pattern();
            assert_eq!(got.as_deref(), suggested, "{command}");
            if let Some(pattern) = got {
                assert!(p.check_pattern(&pattern).is_ok(), "{command}");
            }
        }
        for bad in ["*", "* status", "git log *", "git status; *", ""] {
            assert!(
                matches!(
                    params.check_pattern(bad),
                    Err(Error::Invalid {
                        code: "invalid_pattern",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        let path = ApprovalParams {
            tool: "write_file".into(),
            input: json!({ "path": "a.txt" }),
            reason: None,
            allow_edit: false,
            approvers: None,
        };
        assert!(path.check_pattern("a.txt").is_err());
    }

    fn bash(args: Value) -> ApprovalParams {
        ApprovalParams::parse(&input("Bash", args)).unwrap()
    }

    #[test]
    fn a_rule_holds_to_every_field_but_the_free_ones() {
        let approved = bash(json!({ "command": "git status", "description": "Show status" }));
        let exact = approved.canonical_input();
        let same = bash(json!({ "command": "git status", "description": "Check the tree" }));
        assert_eq!(same.canonical_input(), exact);
        let background_off = bash(json!({ "command": "git status", "run_in_background": false }));
        assert_eq!(background_off.canonical_input(), exact);
        let pattern = approved.pattern_rule("git status *");
        assert_eq!(same.covered_by(&pattern).as_deref(), Some("git status *"));
        for other in [
            json!({ "command": "git status", "dangerouslyDisableSandbox": true }),
            json!({ "command": "git status", "run_in_background": true }),
            json!({ "command": "git status x", "cmd": "rm -rf ~" }),
            json!({ "command": "git status", "env": { "GIT_PAGER": "sh -c id" } }),
            json!({ "command": "git status", "timeout": 600000 }),
        ] {
            let call = bash(other.clone());
            assert_ne!(call.canonical_input(), exact, "{other}");
            assert_eq!(call.covered_by(&pattern), None, "{other}");
        }
        // A pattern rule kept before identity fields: only the bare command.
        assert_eq!(
            same.covered_by("git status *").as_deref(),
            Some("git status *")
        );
        let flagged = bash(json!({ "command": "git status", "dangerouslyDisableSandbox": true }));
        assert_eq!(flagged.covered_by("git status *"), None);
        // Other tools hold to their whole input.
        let mcp = |d: &str| {
            ApprovalParams::parse(&input(
                "mcp__x__run",
                json!({ "command": "ls", "description": d }),
            ))
            .unwrap()
        };
        assert_ne!(mcp("a").canonical_input(), mcp("b").canonical_input());
    }

    #[test]
    fn the_card_shows_the_free_fields_the_other_fields_and_the_decision() {
        let described = bash(json!({ "command": "ls", "description": "d", "timeout": 5 }));
        assert_eq!(described.free_fields(), ["description"]);
        assert_eq!(
            described.rest().as_deref(),
            Some("{\n  \"description\": \"d\",\n  \"timeout\": 5\n}")
        );
        let bare = bash(json!({ "command": "ls" }));
        assert!(bare.free_fields().is_empty());
        assert_eq!(bare.rest(), None);
        let other = ApprovalParams::parse(&input("deploy", json!({ "a": 1 }))).unwrap();
        assert_eq!(other.rest(), None);
        let form = DecisionForm {
            decision: Decision::Deny,
            reason: Some("no".into()),
            pattern: None,
            scope: RuleScope::All,
            edited: None,
        };
        assert_eq!(
            result(&form, "alice", None),
            json!({ "decision": "deny", "answered_by": "alice", "reason": "no", "comment": "no" })
        );
        let names: Vec<_> = [Decision::Deny, Decision::Once, Decision::Always]
            .map(Decision::as_str)
            .into();
        assert_eq!(names, ["deny", "once", "always"]);
    }

    #[tokio::test]
    async fn kept_rules_match_their_owner_tool_and_fields_until_revoked() {
        let t = crate::testing::TestDb::new().await;
        let mut conn = t.conn().await;
        let alice = &t.alice.id;
        let session = &t.session;
        let everywhere = |user| RuleOwner {
            owner: user,
            by: user,
            session: None,
        };
        let status = bash(json!({ "command": "git status", "description": "a" }));
        let log = bash(json!({ "command": "git log -1", "description": "b" }));
        assert!(
            matching_rule(&mut conn, alice, session, &status)
                .await
                .unwrap()
                .is_none()
        );

        let exact = keep_rule(&mut conn, everywhere(alice), &status, None)
            .await
            .unwrap();
        assert_eq!(exact.len(), 36, "a UUID: {exact}");
        let again = keep_rule(&mut conn, everywhere(alice), &status, None)
            .await
            .unwrap();
        assert_eq!(again, exact, "an identical rule is not kept twice");
        let same = bash(json!({ "command": "git status", "description": "c" }));
        let matched = matching_rule(&mut conn, alice, session, &same)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (matched.id.as_str(), matched.pattern),
            (exact.as_str(), None)
        );
        assert!(
            matching_rule(&mut conn, alice, session, &log)
                .await
                .unwrap()
                .is_none()
        );
        let other_tool =
            ApprovalParams::parse(&input("Shell", json!({ "command": "git status" }))).unwrap();
        assert!(
            matching_rule(&mut conn, alice, session, &other_tool)
                .await
                .unwrap()
                .is_none()
        );

        let like = keep_rule(&mut conn, everywhere(alice), &log, Some("git log *"))
            .await
            .unwrap();
        assert_ne!(like, exact);
        let matched = matching_rule(&mut conn, alice, session, &log)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(matched.id, like);
        assert_eq!(
            matched.result(),
            json!({ "decision": "always", "rule_id": like, "automatic": true, "pattern": "git log *" })
        );
        let flagged = bash(json!({ "command": "git log -2", "dangerouslyDisableSandbox": true }));
        assert!(
            matching_rule(&mut conn, alice, session, &flagged)
                .await
                .unwrap()
                .is_none()
        );

        let listed: Vec<_> = list_rules(&mut conn, alice).await.unwrap();
        let kinds: Vec<_> = listed.iter().map(|r| (&*r.id, &*r.match_kind)).collect();
        assert_eq!(kinds.len(), 2);
        assert!(
            kinds.contains(&(exact.as_str(), "exact"))
                && kinds.contains(&(like.as_str(), "pattern"))
        );
        assert_eq!(revoke_rule(&mut conn, alice, &like).await.unwrap(), "Bash");
        assert!(
            matching_rule(&mut conn, alice, session, &log)
                .await
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            revoke_rule(&mut conn, alice, &like).await,
            Err(Error::NotFound(_))
        ));
    }

    #[test]
    fn a_kept_pattern_rule_is_shown_with_the_fields_it_holds_to() {
        let approved = bash(json!({ "command": "git status", "timeout": 5 }));
        let rule = ApprovalRule {
            id: "r".into(),
            tool: "Bash".into(),
            match_kind: "pattern".into(),
            input: approved.pattern_rule("git status *"),
            created_at: 0,
            created_by: "alice".into(),
            session_id: None,
            session_title: None,
        };
        assert_eq!(
            rule.shown(),
            (
                "git status *".to_owned(),
                Some(r#"{"timeout":5}"#.to_owned())
            )
        );
    }

    #[test]
    fn limits_hold_at_their_exact_bounds() {
        let code = |r: Result<ApprovalParams>| match r {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        // The tool's name: 100 characters (not bytes), not 101.
        let tool = "é".repeat(MAX_TOOL_CHARS);
        ApprovalParams::parse(&input(&tool, json!({}))).unwrap();
        let longer = format!("{tool}x");
        assert_eq!(
            code(ApprovalParams::parse(&input(&longer, json!({})))),
            "invalid_tool"
        );
        // The input: 16 KiB as JSON, not a byte more (the number as the
        // docs give it, not the constant, so that a wrong constant fails).
        let at_limit = json!({ "x": "y".repeat(16_384 - 8) });
        assert_eq!(at_limit.to_string().len(), 16_384);
        ApprovalParams::parse(&input("t", at_limit)).unwrap();
        let over = json!({ "x": "y".repeat(16_384 - 7) });
        assert_eq!(
            code(ApprovalParams::parse(&input("t", over))),
            "input_too_large"
        );
        // The reason: 500 characters (not bytes), not 501.
        for (chars, accepted) in [
            (1, true),
            (MAX_REASON_CHARS, true),
            (MAX_REASON_CHARS + 1, false),
        ] {
            let mut request = input("t", json!({}));
            request.reason = Some("é".repeat(chars));
            let parsed = ApprovalParams::parse(&request);
            if accepted {
                parsed.unwrap_or_else(|e| panic!("a reason of {chars}: {e:?}"));
            } else {
                assert_eq!(code(parsed), "invalid_reason");
            }
        }
    }

    #[test]
    fn a_request_needs_a_plain_tool_name_and_counts_its_approvers() {
        let code = |r: Result<ApprovalParams>| match r {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(ApprovalParams::parse(&input("Ba\tsh", json!({})))),
            "invalid_tool"
        );
        let mut request = input("Bash", json!({}));
        assert_eq!(ApprovalParams::parse(&request).unwrap().quorum(), 1);
        request.approvers = Some(2);
        assert_eq!(ApprovalParams::parse(&request).unwrap().quorum(), 2);
    }

    #[test]
    fn a_decision_keeps_its_comment_within_bounds_and_says_what_was_decided() {
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let comment = |chars: usize| "é".repeat(chars);
        let at_limit = comment(MAX_REASON_CHARS);
        let kept = parse_decision(&f(&[("decision", "once"), ("comment", &at_limit)])).unwrap();
        assert_eq!(kept.reason.as_deref(), Some(at_limit.as_str()));
        let over = comment(MAX_REASON_CHARS + 1);
        assert!(matches!(
            parse_decision(&f(&[("decision", "deny"), ("comment", &over)])),
            Err(Error::Invalid {
                code: "invalid_reason",
                ..
            })
        ));
        // A blank comment falls back to `reason`; blank both: none.
        let fallback = parse_decision(&f(&[
            ("decision", "deny"),
            ("comment", " "),
            ("reason", "no"),
        ]))
        .unwrap();
        assert_eq!(fallback.reason.as_deref(), Some("no"));
        let blank = parse_decision(&f(&[
            ("decision", "deny"),
            ("comment", " "),
            ("reason", " "),
        ]))
        .unwrap();
        assert_eq!(blank.reason, None);
        // A blank scope is the default; a blank edit is no edit.
        let always = parse_decision(&f(&[
            ("decision", "always"),
            ("scope", ""),
            ("edited_input", " "),
        ]))
        .unwrap();
        assert_eq!(
            (always.scope, always.edited, always.pattern),
            (RuleScope::All, None, None)
        );
        let edited = parse_decision(&f(&[("decision", "once"), ("edited_input", "{}")])).unwrap();
        assert_eq!(edited.edited.as_deref(), Some("{}"));

        // What the agent is told: the comment, as `reason` too on a denial;
        // a kept rule's scope and id.
        let deny = parse_decision(&f(&[("decision", "deny"), ("comment", "risky")])).unwrap();
        assert_eq!(
            result(&deny, "alice", None),
            json!({ "decision": "deny", "answered_by": "alice", "comment": "risky", "reason": "risky" })
        );
        let once = parse_decision(&f(&[("decision", "once"), ("comment", "ok")])).unwrap();
        assert_eq!(
            result(&once, "alice", None),
            json!({ "decision": "once", "answered_by": "alice", "comment": "ok" })
        );
        let like = parse_decision(&f(&[
            ("decision", "always_like"),
            ("pattern", "git *"),
            ("scope", "session"),
        ]))
        .unwrap();
        assert_eq!(
            result(&like, "alice", Some("r1")),
            json!({
                "decision": "always",
                "answered_by": "alice",
                "scope": "session",
                "pattern": "git *",
                "rule_id": "r1",
            })
        );
    }

    #[test]
    fn a_pattern_rule_holds_to_the_other_fields_and_patterns_are_bounded() {
        let call = bash(json!({ "command": "git status", "timeout": 5 }));
        let rule = call.pattern_rule("git *");
        assert_eq!(call.covered_by(&rule).as_deref(), Some("git *"));
        let same_fields = bash(json!({ "command": "git log", "timeout": 5 }));
        assert_eq!(same_fields.covered_by(&rule).as_deref(), Some("git *"));
        let other_timeout = bash(json!({ "command": "git log", "timeout": 6 }));
        assert_eq!(other_timeout.covered_by(&rule), None);

        // A pattern has at most 200 characters.
        let at_limit = format!("echo {}", "a".repeat(195));
        bash(json!({ "command": at_limit }))
            .check_pattern(&at_limit)
            .unwrap();
        let over = format!("{at_limit}a");
        assert!(matches!(
            bash(json!({ "command": over })).check_pattern(&over),
            Err(Error::Invalid {
                code: "invalid_pattern",
                ..
            })
        ));

        // `*` stops at `/` and at a `..` of its own, not at one it only
        // touches.
        assert!(pattern_matches("ls .*", "ls ..x"));
        assert!(!pattern_matches("ls .*", "ls ../x"));
        assert!(!pattern_matches("ls a*", "ls a..x"));
    }
}
