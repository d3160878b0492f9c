use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Member;
use crate::domain::text;
use crate::http::error::{ApiError, FieldError, ResultExt};
use crate::http::extract::Json;
use crate::http::response::Created;
use crate::http::text_field::{Controls, text_field};
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
    /// The name and the e-mail address, or every field's error.
    fn validate(&self) -> Result<(String, String), ApiError> {
        let name = text_field("name", &self.name, 200, Controls::None);
        let email = Some(self.email.trim())
            .filter(|email| text::is_email(email))
            .ok_or_else(|| FieldError::new("email", "must be an e-mail address such as ada@example.org"));
        match (name, email) {
            (Ok(name), Ok(email)) => Ok((name.to_owned(), email.to_owned())),
            (name, email) => Err(ApiError::Invalid(name.err().into_iter().chain(email.err()).collect())),
        }
    }
}

/// Registers a member.
#[utoipa::path(
    post, path = "", tag = "members",
    responses(
        (status = 201, description = "Created", body = Member),
        (status = 409, description = "A member with this e-mail exists"),
        (status = 422, description = "Invalid fields"),
    ),
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
    tracing::info!(member.id = row.id.0, "member created");
    Ok(Created::new(format!("/api/v1/members/{}", row.id), row))
}
