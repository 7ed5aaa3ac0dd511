//! Identifiers of stored things: UUID v4 text, wrapped per noun so that a
//! session id can never be passed where a user id is expected.

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, sqlx::Type, serde::Serialize)]
        #[sqlx(transparent)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A fresh random id.
            pub fn generate() -> Self {
                Self(uuid::Uuid::new_v4().to_string())
            }

            /// Accepts only a well-formed UUID, normalised to lower case.
            pub fn parse(text: &str) -> Option<Self> {
                uuid::Uuid::parse_str(text).ok().map(|id| Self(id.to_string()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A user account.
    UserId
);
id_type!(
    /// An agent session (one conversation).
    SessionId
);
id_type!(
    /// An API token, as operators see it (never the token itself).
    TokenId
);
id_type!(
    /// A widget (one request for input).
    WidgetId
);
