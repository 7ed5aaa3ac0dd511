//! Column types the Any driver needs told: enums stored as text (sqlx
//! derives `Type` for an enum per concrete database, not for `Any`) and
//! yes/no flags stored as 0 or 1.

/// Implements `sqlx::Type`, `Encode` and `Decode` for the `Any` driver on a
/// fieldless enum, each variant stored as the given text; unknown text
/// fails to decode. The same texts are the enum's `FromStr` (for the
/// command line) and its `TEXTS`.
macro_rules! text_enum {
    ($ty:ty { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value's text, in declaration order.
            pub const TEXTS: &'static [&'static str] = &[$($text),+];
        }

        impl std::str::FromStr for $ty {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!(
                        "`{other}` is not one of {}",
                        Self::TEXTS.join(", ")
                    )),
                }
            }
        }

        impl sqlx::Type<sqlx::Any> for $ty {
            fn type_info() -> sqlx::any::AnyTypeInfo {
                <str as sqlx::Type<sqlx::Any>>::type_info()
            }

            fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
                <str as sqlx::Type<sqlx::Any>>::compatible(ty)
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::Any> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                let text: &'q str = match self {
                    $(Self::$variant => $text,)+
                };
                <&'q str as sqlx::Encode<'q, sqlx::Any>>::encode_by_ref(&text, buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $ty {
            fn decode(
                value: <sqlx::Any as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                match <&'r str as sqlx::Decode<'r, sqlx::Any>>::decode(value)? {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!(
                        "unexpected {} {other:?} in the database",
                        stringify!($ty)
                    )
                    .into()),
                }
            }
        }
    };
}

pub(crate) use text_enum;

/// A yes/no column, stored as the integer 0 or 1 on both backends (the Any
/// driver decodes a boolean only from a boolean column). Read with
/// `#[sqlx(try_from = "Flag")]` on a `bool` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0
    }
}

impl sqlx::Type<sqlx::Any> for Flag {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <i64 as sqlx::Type<sqlx::Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <i64 as sqlx::Type<sqlx::Any>>::compatible(ty)
    }
}

impl<'q> sqlx::Encode<'q, sqlx::Any> for Flag {
    fn encode_by_ref(
        &self,
        buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer<'q>,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <i64 as sqlx::Encode<'q, sqlx::Any>>::encode_by_ref(&i64::from(self.0), buf)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Any> for Flag {
    fn decode(
        value: <sqlx::Any as sqlx::Database>::ValueRef<'r>,
    ) -> Result<Self, sqlx::error::BoxDynError> {
        Ok(Self(
            <i64 as sqlx::Decode<'r, sqlx::Any>>::decode(value)? != 0,
        ))
    }
}
