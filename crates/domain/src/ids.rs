//! Identifiers of stored things: UUID text, wrapped per noun so that a
//! session id can never be passed where a user id is expected.
//!
//! New ids are UUID v7 (RFC 9562): the millisecond they were made, then 74
//! random bits (no counter, so an id tells nothing of its neighbours). Ids
//! made close in time sort close together, so the indexes keyed by them,
//! and by the session a row belongs to, take a new row on the few pages
//! they took the last ones on, not on a page of their own each
//! (`docs/performance.md`, "Ids in time order"). Ids made before are v4;
//! both are accepted.

/// A new UUID v7: this millisecond, then 74 random bits (no counter).
pub fn time_ordered() -> uuid::Uuid {
    uuid::Uuid::new_v7(uuid::Timestamp::now(uuid::NoContext))
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, sqlx::Type, serde::Serialize)]
        #[sqlx(transparent)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A fresh id: this millisecond and 74 random bits.
            pub fn generate() -> Self {
                Self(time_ordered().to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_v7_in_time_order_with_random_tails() {
        let first = WidgetId::generate();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let ids: Vec<SessionId> = (0..1_000).map(|_| SessionId::generate()).collect();
        let parsed = uuid::Uuid::parse_str(first.as_str()).expect("a UUID");
        assert_eq!(parsed.get_version_num(), 7);
        // Text order is time order, across milliseconds.
        assert!(ids.iter().all(|id| id.as_str() > first.as_str()));
        let millis = |id: &SessionId| id.as_str()[..13].to_owned();
        // Within one millisecond the tails are random, not a counter:
        // a thousand ids take a few milliseconds at most, so some ids of
        // one millisecond come out of order.
        let same_ms_out_of_order = ids
            .windows(2)
            .filter(|w| millis(&w[0]) == millis(&w[1]) && w[0] > w[1])
            .count();
        assert!(same_ms_out_of_order > 0, "ids of one millisecond in order");
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        // Ids made before (v4) are still accepted.
        let old = "6F1C2B9E-8D4A-4C3B-9E2F-1A2B3C4D5E6F";
        assert_eq!(
            SessionId::parse(old).map(|id| id.as_str().to_owned()),
            Some(old.to_lowercase())
        );
    }
}
