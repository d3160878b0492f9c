//! The one spelling rule of the kinds the database stores, the API sends and the logs carry:
//! upper case with words split by `_` (`CLOCK_SKEW`, `DUE_TOMORROW`).

/// Declares a fieldless enum whose every form is its variant names in UPPER_SNAKE_CASE: the text
/// column (`sqlx::Type`, a check constraint keeps it to the known names), JSON (serde), the
/// OpenAPI schema (utoipa), `Display`, `FromStr` and `&'static str` (strum). An unknown name
/// parses to the error `Error::function` makes of it.
///
/// A macro rather than a list of derives copied onto each enum: the rule is the stored data's,
/// so every kind spells its names the same way or the check constraints reject them.
macro_rules! upper_snake_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident, parse error $error:ident::$error_fn:ident {
            $($(#[$variant_meta:meta])* $variant:ident,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
            utoipa::ToSchema,
            sqlx::Type,
            strum::Display,
            strum::EnumString,
            strum::IntoStaticStr,
        )]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        #[sqlx(type_name = "text", rename_all = "SCREAMING_SNAKE_CASE")]
        #[strum(serialize_all = "SCREAMING_SNAKE_CASE", parse_err_ty = $error, parse_err_fn = $error::$error_fn)]
        $vis enum $name {
            $($(#[$variant_meta])* $variant,)+
        }
    };
}

pub(crate) use upper_snake_enum;
