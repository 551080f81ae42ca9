//! The decoder: table form → JSON value (grammar in the [module docs](super)).

use serde_json::{Map, Number, Value};

use super::model::{DecodeError, INDENT, MAX_DEPTH};
use crate::dialect::{self, Literal};

/// A cursor over the text being decoded.
pub(super) struct Reader<'a> {
    pub(super) s: &'a str,
    pub(super) i: usize,
}

/// One cell of a row.
enum Cell {
    Missing,
    Value(Value),
    /// A sub-table header: its row count and keys; its rows follow the row's line.
    Sub(usize, Vec<String>),
}

impl<'a> Reader<'a> {
    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError::Syntax { at: self.i, what }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.i..).unwrap_or("")
    }

    fn eat(&mut self, b: u8, what: &'static str) -> Result<(), DecodeError> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    pub(super) fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    pub(super) fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    /// A value in JSON context: JSON, where an array may be a table.
    pub(super) fn json(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut m = Map::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Value::Object(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    self.eat(b':', "`:` after a key")?;
                    let v = self.json(depth + 1)?;
                    m.insert(k, v);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Object(m));
                        }
                        _ => return Err(self.err("`,` or `}` in an object")),
                    }
                }
            }
            Some(b'[') => {
                if let Some((n, keys)) = self.header()? {
                    self.eat(b'\n', "a newline after a table header")?;
                    return self.rows(n, &keys, 0, depth + 1).map(Value::Array);
                }
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Value::Array(a));
                }
                loop {
                    a.push(self.json(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Array(a));
                        }
                        _ => return Err(self.err("`,` or `]` in an array")),
                    }
                }
            }
            Some(b'"') => self.string().map(Value::String),
            Some(_) => {
                let len = self
                    .rest()
                    .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.')))
                    .unwrap_or(self.rest().len());
                let word = &self.rest()[..len];
                let v = scalar_word(word).ok_or_else(|| self.err("a JSON value"))?;
                self.i += len;
                Ok(v)
            }
            None => Err(self.err("a value")),
        }
    }

    /// A JSON string at the cursor (starting with `"`).
    fn string(&mut self) -> Result<String, DecodeError> {
        let rest = self.rest().as_bytes();
        if rest.first() != Some(&b'"') {
            return Err(self.err("a string"));
        }
        let mut j = 1;
        loop {
            match rest.get(j) {
                Some(b'\\') => j += 2,
                Some(b'"') => break,
                Some(_) => j += 1,
                None => return Err(self.err("the end of a string")),
            }
        }
        let slice = &self.rest()[..=j];
        let s: String = serde_json::from_str(slice).map_err(|_| self.err("a JSON string"))?;
        self.i += j + 1;
        Ok(s)
    }

    /// A table header `[N]{k1,…}:` at the cursor, consumed; `None` (nothing consumed) when
    /// the cursor is not at one.
    fn header(&mut self) -> Result<Option<(usize, Vec<String>)>, DecodeError> {
        let rest = self.rest();
        let Some(body) = rest.strip_prefix('[') else {
            return Ok(None);
        };
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || !body[digits..].starts_with("]{") {
            return Ok(None);
        }
        let n: usize = body[..digits]
            .parse()
            .map_err(|_| self.err("a row count"))?;
        self.i += 1 + digits + 2;
        let mut keys = Vec::new();
        if self.peek() == Some(b'}') {
            return Err(self.err("a key in a table header"));
        }
        loop {
            let k = if self.peek() == Some(b'"') {
                self.string()?
            } else {
                let len = self
                    .rest()
                    .find([',', '}', '\n'])
                    .ok_or_else(|| self.err("`}` closing a table header"))?;
                let k = self.rest()[..len].to_owned();
                if !super::write::bare_key(&k) {
                    return Err(self.err("a key in a table header"));
                }
                self.i += len;
                k
            };
            keys.push(k);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.err("`,` or `}` in a table header")),
            }
        }
        self.eat(b':', "`:` after a table header")?;
        Ok(Some((n, keys)))
    }

    /// `n` rows of a table with `keys`, at `level`, each followed by its sub-tables' rows.
    fn rows(
        &mut self,
        n: usize,
        keys: &[String],
        level: usize,
        depth: usize,
    ) -> Result<Vec<Value>, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        let mut out = Vec::new();
        for _ in 0..n {
            for _ in 0..level * INDENT {
                self.eat(b' ', "the indentation of a row")?;
            }
            let mut cells: Vec<Cell> = Vec::with_capacity(keys.len());
            while !matches!(self.peek(), Some(b'\n')) {
                if cells.len() == keys.len() {
                    return Err(self.err("no more cells than header keys"));
                }
                cells.push(self.cell()?);
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        // A `,` is followed by a cell, possibly missing.
                        if self.peek() == Some(b'\n') {
                            cells.push(Cell::Missing);
                        }
                    }
                    Some(b'\n') => {}
                    _ => return Err(self.err("`,` or a newline after a cell")),
                }
            }
            if cells.len() > keys.len() {
                return Err(self.err("no more cells than header keys"));
            }
            self.eat(b'\n', "a newline ending a row")?;
            let mut o = Map::new();
            for (k, c) in keys.iter().zip(cells) {
                match c {
                    Cell::Missing => {}
                    Cell::Value(v) => {
                        o.insert(k.clone(), v);
                    }
                    Cell::Sub(m, sub_keys) => {
                        let sub = self.rows(m, &sub_keys, level + 1, depth + 2)?;
                        o.insert(k.clone(), Value::Array(sub));
                    }
                }
            }
            out.push(Value::Object(o));
        }
        Ok(out)
    }

    /// One cell, up to (not including) the `,` or newline after it.
    fn cell(&mut self) -> Result<Cell, DecodeError> {
        match self.peek() {
            Some(b',' | b'\n') => Ok(Cell::Missing),
            Some(b'"') => self.string().map(|s| Cell::Value(Value::String(s))),
            Some(b'[' | b'{') => {
                if let Some((n, keys)) = self.header()? {
                    return Ok(Cell::Sub(n, keys));
                }
                let len = balanced_len(self.rest().as_bytes())
                    .ok_or_else(|| self.err("a closed JSON value"))?;
                let v = dialect::parse_unbounded(&self.rest().as_bytes()[..len])
                    .map_err(|_| self.err("a JSON value in a cell"))?
                    .value;
                self.i += len;
                Ok(Cell::Value(v))
            }
            Some(_) => {
                let len = self.rest().find([',', '\n']).unwrap_or(self.rest().len());
                let word = &self.rest()[..len];
                let v = match scalar_word(word) {
                    Some(v) => v,
                    None if word.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
                        return Err(self.err("a number"));
                    }
                    None => Value::String(word.to_owned()),
                };
                self.i += len;
                Ok(Cell::Value(v))
            }
            None => Err(self.err("a cell")),
        }
    }
}

/// `true`, `false`, `null`, a number (as spelled), or `NaN` / `Infinity` / `-Infinity`.
fn scalar_word(w: &str) -> Option<Value> {
    match w {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        "NaN" => Some(Value::Number(Literal::NaN.number())),
        "Infinity" => Some(Value::Number(Literal::Infinity.number())),
        "-Infinity" => Some(Value::Number(Literal::NegInfinity.number())),
        _ if w.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
            serde_json::from_str::<Number>(w).ok().map(Value::Number)
        }
        _ => None,
    }
}

/// The length of the JSON array or object at the start of `b` (brackets balanced outside
/// strings), or `None` when it does not close.
fn balanced_len(b: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut j = 0;
    while j < b.len() {
        let c = b[j];
        if in_str {
            match c {
                b'\\' => j += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(j + 1);
                    }
                }
                b'\n' => return None,
                _ => {}
            }
        }
        j += 1;
    }
    None
}

/// The value a text in the table form stands for: `decode(&encode(v, _).text) == v`.
///
/// # Errors
/// [`DecodeError`] when `text` is neither JSON nor in the table form.
pub fn decode(text: &str) -> Result<Value, DecodeError> {
    if let Ok(p) = crate::dialect::parse_unbounded(text.as_bytes()) {
        return Ok(p.value);
    }
    let mut r = Reader { s: text, i: 0 };
    let v = r.json(0)?;
    r.ws();
    if !r.at_end() {
        return Err(DecodeError::Syntax {
            at: r.i,
            what: "the end of the text",
        });
    }
    Ok(v)
}
