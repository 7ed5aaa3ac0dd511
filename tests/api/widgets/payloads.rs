//! The payloads of the systems widgetd's widgets come from, accepted as
//! their specifications write them, beside our own names: Claude Code's
//! AskUserQuestion, the clarification widgets' camelCase fields, wick's
//! `ask_user` and its `Answer{value, text}`, nebo's `ask` and its answers,
//! and Agor's `agor_widgets_request_env_vars`. Each stored and returned in
//! our one canonical form; unknown fields still refused without an echo.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::{call, connect, error_code, structured};
use crate::helpers::{TestApp, ask, assert_error, canary, created, scene, spawn_app, widget};

/// Answers `id` as alice with the JSON `answer`; returns the widget.
async fn answer(app: &TestApp, id: &str, answer: &Value) -> Value {
    let browser = app.login("alice").await;
    let r = app
        .post_json_as(&browser, &format!("/widgets/{id}/submit"), answer)
        .await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The example of "Handle approvals and user input" (Claude Agent SDK
/// documentation, AskUserQuestion's question format), verbatim.
fn ask_user_question_example() -> Value {
    json!({
      "questions": [
        {
          "question": "How should I format the output?",
          "header": "Format",
          "options": [
            { "label": "Summary", "description": "Brief overview of key points" },
            { "label": "Detailed", "description": "Full explanation with examples" }
          ],
          "multiSelect": false
        },
        {
          "question": "Which sections should I include?",
          "header": "Sections",
          "options": [
            { "label": "Introduction", "description": "Opening context" },
            { "label": "Conclusion", "description": "Final summary" }
          ],
          "multiSelect": true
        }
      ]
    })
}

#[tokio::test]
async fn claude_codes_ask_user_question_is_asked_as_written_over_mcp_and_rest() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let over_mcp = structured(call(&client, "ask_user", ask_user_question_example()).await);
    assert_eq!(over_mcp["status"], "pending");
    let id = over_mcp["widget_id"].as_str().unwrap().to_owned();
    let over_rest = created(
        ask(
            &app,
            &s.agent,
            &s.session,
            "ask-user",
            &ask_user_question_example(),
        )
        .await,
    )
    .await;

    // Stored and shown in our one form.
    for id in [&id, &over_rest] {
        let view = widget(&app, &s.agent, id).await;
        let qs = &view["params"]["questions"];
        assert_eq!(qs[0]["multi_select"], false);
        assert_eq!(qs[1]["multi_select"], true);
        assert!(!view.to_string().contains("multiSelect"), "{view}");
    }
    let done = answer(
        &app,
        &id,
        &json!({ "answer.0": "Summary", "answer.1": ["Introduction", "Conclusion"] }),
    )
    .await;
    assert_eq!(
        done["result"]["answers"],
        json!({
            "How should I format the output?": "Summary",
            "Which sections should I include?": ["Introduction", "Conclusion"]
        })
    );

    // An option's `markdown` preview is our `preview_markdown`.
    let mut preview = ask_user_question_example();
    preview["questions"][0]["options"][0]["markdown"] = json!("```\n# Summary\n- one\n```");
    let id = created(ask(&app, &s.agent, &s.session, "ask-user", &preview).await).await;
    let view = widget(&app, &s.agent, &id).await;
    let option = &view["params"]["questions"][0]["options"][0];
    assert_eq!(option["preview_markdown"], "```\n# Summary\n- one\n```");
    assert!(option.get("markdown").is_none(), "{option}");

    // `metadata` (tracking, never shown) is accepted and left unread.
    let mut tracked = ask_user_question_example();
    tracked["metadata"] = json!({ "source": "remember" });
    let id = created(ask(&app, &s.agent, &s.session, "ask-user", &tracked).await).await;
    let view = widget(&app, &s.agent, &id).await;
    assert!(!view.to_string().contains("remember"), "{view}");

    // `answers` is filled in by Claude Code's host, never sent by a model:
    // it stays an unknown field, refused without an echo, nothing created.
    let before = app.count("SELECT count(*) FROM widgets").await;
    let mut with_answers = ask_user_question_example();
    let field = canary("field");
    with_answers["answers"] = json!({});
    with_answers["questions"][0][field.as_str()] = json!(true);
    let r = ask(&app, &s.agent, &s.session, "ask-user", &with_answers).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", Some(&field)).await;
    with_answers["questions"][0]
        .as_object_mut()
        .unwrap()
        .remove(&field);
    let r = ask(&app, &s.agent, &s.session, "ask-user", &with_answers).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, before);
}

#[tokio::test]
async fn clarification_widgets_take_their_camel_case_fields() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let widgets = [
        json!({ "type": "choice", "multiSelect": true,
                "options": [{ "label": "EU" }, { "label": "US" }] }),
        json!({ "type": "curation", "defaultState": "none-selected", "groupBy": "suite",
                "items": [{ "id": "auth", "label": "tests/auth.rs", "metadata": { "suite": "unit" } },
                          { "id": "billing", "label": "tests/billing.rs", "metadata": { "suite": "integration" } }] }),
        json!({ "type": "mapping", "allowUnmapped": true, "allowManyToOne": true,
                "left": [{ "id": "email", "label": "E-mail address" }, { "id": "signup", "label": "Signed up" }],
                "right": [{ "id": "contact.email", "label": "Email" }] }),
        json!({ "type": "tree", "allowReparent": true, "allowDelete": true,
                "allowRename": true, "allowAdd": true,
                "nodes": [{ "id": "src", "label": "src" }, { "id": "main", "label": "main.rs", "parentId": "src" }] }),
    ];
    let expected = [
        json!({ "multi_select": true }),
        json!({ "default_state": "none_selected", "group_by": "suite" }),
        json!({ "allow_unmapped": true, "allow_many_to_one": true }),
        json!({ "allow_reparent": true, "allow_delete": true, "allow_rename": true, "allow_add": true }),
    ];
    for (w, expected) in widgets.iter().zip(expected) {
        let body = json!({ "question": "Which ones?", "widget": w });
        let id = created(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
        let stored = widget(&app, &s.agent, &id).await["params"]["widget"].clone();
        for (key, value) in expected.as_object().unwrap() {
            assert_eq!(&stored[key], value, "{key} of {stored}");
        }
        let text = stored.to_string();
        for camel in [
            "multiSelect",
            "defaultState",
            "groupBy",
            "allowUnmapped",
            "parentId",
        ] {
            assert!(!text.contains(camel), "{text}");
        }
        if w["type"] == "tree" {
            assert_eq!(stored["nodes"][1]["parent_id"], "src");
        }
    }

    // A path where the image's bytes belong is refused, saying to send
    // base64, without quoting the path; the daemon reads no file.
    let path = "screenshots/login-page.png";
    let body = json!({ "question": "What is wrong here?",
        "widget": { "type": "annotation", "image": path, "tools": ["rectangle"] } });
    let r = ask(&app, &s.agent, &s.session, "clarification", &body).await;
    let message = assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_image",
        Some(path),
    )
    .await;
    assert!(message.contains("base64"), "{message}");
    assert!(message.contains("not a path"), "{message}");
}

#[tokio::test]
async fn wicks_ask_user_and_its_answer_value_and_text() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let wick = json!({
        "question": "Which environment should I deploy to?",
        "options": [{ "label": "Staging", "value": "staging" }, { "label": "Production", "value": "prod" }],
        "allow_freeform": true,
        "agent_name": "deploy-bot"
    });
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let id = structured(call(&client, "ask_user", wick.clone()).await)["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let view = widget(&app, &s.agent, &id).await;
    assert_eq!(view["kind"], "ask_user");
    assert_eq!(view["params"]["agent_name"], "deploy-bot");
    let browser = app.login("alice").await;
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(page.contains("deploy-bot"), "the card names the agent");

    // wick's Answer: the value wins when both are given.
    let done = answer(&app, &id, &json!({ "value": "prod", "text": "after 5pm" })).await;
    assert_eq!(
        done["result"]["answers"],
        json!({ "Which environment should I deploy to?": "prod" })
    );
    // Text alone is the typed answer; a label is read like its value.
    let id = created(ask(&app, &s.agent, &s.session, "ask-user", &wick).await).await;
    let done = answer(&app, &id, &json!({ "text": "a canary first" })).await;
    assert_eq!(
        done["result"]["answers"]["Which environment should I deploy to?"],
        "a canary first"
    );
    let id = created(ask(&app, &s.agent, &s.session, "ask-user", &wick).await).await;
    let done = answer(&app, &id, &json!({ "value": "Staging" })).await;
    assert_eq!(
        done["result"]["answers"]["Which environment should I deploy to?"],
        "staging"
    );
    // A value that is no option is refused without an echo.
    let id = created(ask(&app, &s.agent, &s.session, "ask-user", &wick).await).await;
    let browser = app.login("alice").await;
    let odd = canary("value");
    let r = app
        .post_json_as(
            &browser,
            &format!("/widgets/{id}/submit"),
            &json!({ "value": odd }),
        )
        .await;
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_option",
        Some(&odd),
    )
    .await;

    // One question or `questions`, not both; `allow_freeform: false` holds.
    let mut both = wick.clone();
    both["questions"] = json!([{ "question": "Q?", "header": "H",
        "options": [{ "label": "a" }, { "label": "b" }] }]);
    let r = ask(&app, &s.agent, &s.session, "ask-user", &both).await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "ambiguous_ask", None).await;
    let mut closed = wick.clone();
    closed["allow_freeform"] = json!(false);
    let id = created(ask(&app, &s.agent, &s.session, "ask-user", &closed).await).await;
    let r = app
        .post_json_as(
            &browser,
            &format!("/widgets/{id}/submit"),
            &json!({ "text": "typed" }),
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
}

#[tokio::test]
async fn nebos_ask_with_prompt_text_and_widgets() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    // nebo's own examples (its `agent(resource: message, action: ask, …)`
    // arguments; our tool is `ask`).
    let buttons = json!({ "prompt": "Which option do you prefer?", "widgets": [
        { "type": "buttons", "label": "Choose one:", "options": ["Option A", "Option B", "Option C"] }
    ] });
    let confirm = json!({ "prompt": "Should I proceed with the deployment?" });
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let id = structured(call(&client, "ask", buttons).await)["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let q = widget(&app, &s.agent, &id).await["params"]["questions"][0].clone();
    assert_eq!(q["question"], "Which option do you prefer?");
    assert_eq!(q["header"], "Choose one:");
    assert_eq!(q["kind"], "buttons");
    // nebo's answer `{value}`.
    let done = answer(&app, &id, &json!({ "value": "Option B" })).await;
    assert_eq!(
        done["result"]["answers"],
        json!({ "Which option do you prefer?": "Option B" })
    );
    let id = created(ask(&app, &s.agent, &s.session, "ask", &confirm).await).await;
    let q = widget(&app, &s.agent, &id).await["params"]["questions"][0].clone();
    assert_eq!(q["kind"], "confirm");
    assert_eq!(q["options"], json!([{ "label": "Yes" }, { "label": "No" }]));

    // `text` for `prompt`; a checkbox answered as nebo sends it, comma-joined.
    let files = json!({ "text": "Which files should I delete?", "widgets": [
        { "type": "checkbox", "options": ["a.txt", "b.txt", "c.txt"], "default": "b.txt" }
    ] });
    let id = created(ask(&app, &s.agent, &s.session, "ask", &files).await).await;
    let done = answer(&app, &id, &json!({ "value": "a.txt,c.txt" })).await;
    assert_eq!(
        done["result"]["answers"]["Which files should I delete?"],
        json!(["a.txt", "c.txt"])
    );

    // One widget here; several questions are `items`.
    let two =
        json!({ "prompt": "Two?", "widgets": [{ "type": "confirm" }, { "type": "confirm" }] });
    let r = ask(&app, &s.agent, &s.session, "ask", &two).await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "widgets_count", None).await;
    let field = canary("field");
    let odd = json!({ "prompt": "Odd?", "widgets": [{ "type": "confirm", field.clone(): 1 }] });
    let r = ask(&app, &s.agent, &s.session, "ask", &odd).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", Some(&field)).await;
}

#[tokio::test]
async fn agors_tool_name_is_an_alias_never_listed_twice() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"request_env_vars"));
    assert!(!names.iter().any(|n| n.starts_with("agor_")), "{names:?}");

    // Agor's own call (its repository tool's description).
    let agor = json!({ "names": ["GITHUB_TOKEN"], "reason": "To clone the private repository.",
        "auto_resume": true });
    let done = structured(call(&client, "agor_widgets_request_env_vars", agor).await);
    assert_eq!(done["status"], "pending");
    let id = done["widget_id"].as_str().unwrap().to_owned();
    let view = widget(&app, &s.agent, &id).await;
    assert_eq!(view["kind"], "env_vars");
    assert_eq!(view["params"]["names"], json!(["GITHUB_TOKEN"]));
    assert!(view["params"].get("auto_resume").is_none(), "{view}");

    // Its field metadata: `input_type` and `format_hint` as ours.
    let meta = json!({ "names": ["SSH_KEY", "API_TOKEN"], "reason": "To deploy.",
        "variable_metadata": {
            "SSH_KEY": { "description": "Deploy key", "input_type": "textarea" },
            "API_TOKEN": { "format_hint": "starts with tok_", "input_type": "password" } } });
    let done = structured(call(&client, "agor_widgets_request_env_vars", meta).await);
    let view = widget(&app, &s.agent, done["widget_id"].as_str().unwrap()).await;
    let stored = &view["params"]["variable_metadata"];
    assert_eq!(stored["SSH_KEY"]["multiline"], true);
    assert_eq!(stored["API_TOKEN"]["placeholder"], "starts with tok_");
    assert!(!view.to_string().contains("input_type"), "{view}");

    for (body, code) in [
        (
            json!({ "names": ["A_KEY"], "reason": "r", "auto_resume": false }),
            "auto_resume_unsupported",
        ),
        (
            json!({ "names": ["A_KEY"], "reason": "r",
                "variable_metadata": { "A_KEY": { "input_type": "text" } } }),
            "visible_input_refused",
        ),
    ] {
        let r = call(&client, "agor_widgets_request_env_vars", body.clone()).await;
        assert_eq!(error_code(&r), code);
        let r = ask(&app, &s.agent, &s.session, "env-vars", &body).await;
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, None).await;
    }
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new(
            "agor_widgets_ask_user",
        ))
        .await;
    assert!(r.is_err(), "only the listed aliases are tools");
}
