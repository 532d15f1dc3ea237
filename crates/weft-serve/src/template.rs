//! Chat prompts from the Jinja template a GGUF file carries
//! (`tokenizer.chat_template`), rendered with minijinja as Hugging Face
//! renders it: `messages`, `add_generation_prompt`, `bos_token`,
//! `eos_token`, and `raise_exception`. A file without a template gets
//! ChatML.

use minijinja::{context, Environment, ErrorKind};
use serde::Serialize;

const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

#[derive(Serialize, Debug, Clone)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// Compiles `source` (or ChatML when `None`). A template minijinja
    /// cannot parse is an error at start-up, not at the first request.
    pub fn new(source: Option<&str>, bos: String, eos: String) -> Result<ChatTemplate, String> {
        let mut env = Environment::new();
        env.add_function("raise_exception", |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.unwrap_or(CHATML).to_string())
            .map_err(|e| format!("the chat template does not compile: {e}"))?;
        Ok(ChatTemplate { env, bos, eos })
    }

    /// The prompt for `messages`, ending with the assistant's turn opened.
    /// A template that raises (say, on roles out of order) is the caller's
    /// error message.
    pub fn render(&self, messages: &[ChatMessage]) -> Result<String, String> {
        let t = self.env.get_template("chat").map_err(|e| e.to_string())?;
        t.render(context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => self.bos,
            eos_token => self.eos,
        })
        .map_err(|e| match e.detail() {
            Some(d) => format!("chat template: {d}"),
            None => format!("chat template: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, content: &str) -> ChatMessage {
        ChatMessage { role: role.into(), content: content.into() }
    }

    #[test]
    fn chatml_by_default_and_raise_exception_is_an_error() {
        let t = ChatTemplate::new(None, "<s>".into(), "</s>".into()).unwrap();
        assert_eq!(
            t.render(&[msg("user", "Hi")]).unwrap(),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        let strict = ChatTemplate::new(
            Some("{% if messages[0]['role'] != 'user' %}{{ raise_exception('first must be user') }}{% endif %}{{ bos_token }}ok"),
            "<s>".into(),
            "</s>".into(),
        )
        .unwrap();
        assert_eq!(strict.render(&[msg("user", "x")]).unwrap(), "<s>ok");
        let e = strict.render(&[msg("assistant", "x")]).unwrap_err();
        assert!(e.contains("first must be user"), "{e}");
        let bad = ChatTemplate::new(Some("{% for %}"), String::new(), String::new());
        assert!(bad.err().is_some_and(|e| e.contains("does not compile")));
    }
}
