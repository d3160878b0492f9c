use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Member;
use crate::domain::text;
use crate::http::error::{ApiError, FieldError, Problem, ResultExt};
use crate::http::extract::Json;
use crate::http::response::Created;
use crate::state::AppState;
use crate::store;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMember {
    /// 1 to 200 characters (surrounding spaces are trimmed), no control characters, at least one
    /// visible.
    #[schema(min_length = 1, max_length = 200, example = "Ada Lovelace")]
    pub name: String,
    /// An e-mail address by the HTML `input type=email` rule, unique among members
    /// (case-insensitive).
    #[schema(format = Email, max_length = 254, example = "ada@example.org")]
    pub email: String,
}

impl NewMember {
    fn validate(&self) -> Result<(String, String), ApiError> {
        let mut errors = Vec::new();
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            errors.push(FieldError::new("name", "must be 1 to 200 characters"));
        } else if name.chars().any(char::is_control) {
            // PostgreSQL refuses NUL in text, and no name needs a control character.
            errors.push(FieldError::new("name", "must not contain control characters"));
        } else if !text::has_visible_char(name) {
            errors.push(FieldError::new("name", "must contain a visible character"));
        }
        let email = self.email.trim();
        if !text::is_email(email) {
            errors.push(FieldError::new(
                "email",
                "must be an e-mail address such as ada@example.org",
            ));
        }
        if errors.is_empty() {
            Ok((name.to_owned(), email.to_owned()))
        } else {
            Err(ApiError::Invalid(errors))
        }
    }
}

/// Registers a member.
#[utoipa::path(
    post, path = "", tag = "members",
    request_body = NewMember,
    responses(
        (status = 201, description = "Created", body = Member),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A member with this e-mail exists", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create_member(
    State(state): State<AppState>,
    Json(body): Json<NewMember>,
) -> Result<Created<Member>, ApiError> {
    let (name, email) = body.validate()?;
    let row = store::members::insert(&state.pool, &name, &email)
        .await
        .on_constraint("member_email_key", || {
            ApiError::conflict("email_taken", "a member with this e-mail already exists")
        })?;
    tracing::info!(member.id = row.id, "member created");
    Ok(Created::new(format!("/api/v1/members/{}", row.id), row))
}
