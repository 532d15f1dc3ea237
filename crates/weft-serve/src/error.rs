//! Errors as OpenAI's API returns them: a status code and
//! `{"error": {"message", "type", "param", "code"}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
    /// Seconds, for `429` (the `Retry-After` header).
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, kind, message: message.into(), param: None, code: None, retry_after: None }
    }

    /// `400`: the request is malformed or a field is out of range.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// `400` naming the field at fault.
    pub fn invalid_param(param: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { param: Some(param), ..ApiError::invalid(message) }
    }

    /// `404`: no model of that name is served.
    pub fn unknown_model(name: &str) -> ApiError {
        ApiError {
            param: Some("model"),
            code: Some("model_not_found"),
            ..ApiError::new(StatusCode::NOT_FOUND, "invalid_request_error", format!("The model `{name}` does not exist"))
        }
    }

    pub fn unauthorized() -> ApiError {
        ApiError {
            code: Some("invalid_api_key"),
            ..ApiError::new(StatusCode::UNAUTHORIZED, "invalid_request_error", "Incorrect or missing API key")
        }
    }

    /// `429` with `Retry-After`: the model's queue is full.
    pub fn busy(model: &str, retry_after: u64) -> ApiError {
        ApiError {
            retry_after: Some(retry_after),
            code: Some("rate_limit_exceeded"),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!("The queue of model `{model}` is full; retry later"),
            )
        }
    }

    /// `503`: the server is shutting down.
    pub fn shutting_down() -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", "The server is shutting down")
    }

    /// `500`: a generation failed (the others keep running).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}
