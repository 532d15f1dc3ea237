//! A sequence's output text as tokens arrive: incremental detokenization
//! (text is released only once its UTF-8 is complete) and stop strings
//! matched across token boundaries (text that may be the start of a stop
//! string is held back until it is known not to be).

use weft_llama::Tokenizer;

pub struct TextStream {
    ids: Vec<u32>,
    /// `ids[prefix..read]` was decoded last time; new text is what
    /// decoding `ids[prefix..]` adds to it.
    prefix: usize,
    read: usize,
    text: String,
    /// Bytes of `text` already released.
    sent: usize,
    stops: Vec<String>,
}

impl TextStream {
    pub fn new(stops: Vec<String>) -> TextStream {
        TextStream { ids: vec![], prefix: 0, read: 0, text: String::new(), sent: 0, stops }
    }

    /// Adds a generated token. Returns the text now safe to release and
    /// whether a stop string ended the output (the stop string itself and
    /// anything after it are never released).
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> (String, bool) {
        self.ids.push(id);
        let before = tok.decode(&self.ids[self.prefix..self.read], true).unwrap_or_default();
        let now = tok.decode(&self.ids[self.prefix..], true).unwrap_or_default();
        if now.len() > before.len() && !now.ends_with('\u{fffd}') && now.is_char_boundary(before.len()) {
            self.text.push_str(&now[before.len()..]);
            self.prefix = self.read;
            self.read = self.ids.len();
        }
        self.release()
    }

    /// The text held back (the end of the output: no stop string followed).
    pub fn flush(&mut self) -> String {
        let out = self.text[self.sent..].to_string();
        self.sent = self.text.len();
        out
    }

    fn release(&mut self) -> (String, bool) {
        let longest = self.stops.iter().map(|s| s.len()).max().unwrap_or(0);
        // A stop string that ends in the new text starts at most `longest`
        // bytes before the unreleased part.
        let mut from = self.sent.saturating_sub(longest);
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let hit = self.stops.iter().filter_map(|s| self.text[from..].find(s.as_str()).map(|p| from + p)).min();
        if let Some(at) = hit {
            let out = self.text[self.sent.min(at)..at].to_string();
            self.sent = self.text.len();
            return (out, true);
        }
        // Hold back the longest end of the text that starts a stop string.
        let hold = self
            .stops
            .iter()
            .flat_map(|s| (1..s.len()).filter(|&k| s.is_char_boundary(k) && self.text.ends_with(&s[..k])))
            .max()
            .unwrap_or(0);
        let end = (self.text.len() - hold).max(self.sent);
        let out = self.text[self.sent..end].to_string();
        self.sent = end;
        (out, false)
    }

    /// Every byte of text decoded so far (released or not).
    pub fn len(&self) -> usize {
        self.text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `release` with text pieces, as if each were one token's text.
    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let mut t = TextStream::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out = String::new();
        for p in pieces {
            t.text.push_str(p);
            let (s, stopped) = t.release();
            out.push_str(&s);
            if stopped {
                return (out, true);
            }
        }
        out.push_str(&t.flush());
        (out, false)
    }

    #[test]
    fn stop_strings_match_across_pieces() {
        assert_eq!(run(&["END"], &["abc E", "N", "D more"]), ("abc ".into(), true));
        assert_eq!(run(&["\n\n"], &["one\n", "\ntwo"]), ("one".into(), true));
        // A false start is released once it cannot be a stop string.
        assert_eq!(run(&["END"], &["a E", "Nx", " b"]), ("a ENx b".into(), false));
        // The earliest of several stop strings wins.
        assert_eq!(run(&["yz", "x"], &["wxyz"]), ("w".into(), true));
        assert_eq!(run(&[], &["plain ", "text"]), ("plain text".into(), false));
        assert_eq!(run(&["é!"], &["café", "!"]), ("caf".into(), true));
    }
}
