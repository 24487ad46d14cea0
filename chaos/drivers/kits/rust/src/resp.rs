//! RESP (the Redis protocol), as much as the kit's proxy needs: where each command and each
//! reply ends in a byte stream, a command's name, what a reply says. RESP2 and RESP3.

/// What a node answered to one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A simple string (`OK`), a RESP3 double or big number as written.
    Status(String),
    /// An error reply: `NOSCRIPT …`, `READONLY …`.
    Error(String),
    /// An integer; a RESP3 boolean is 1 or 0.
    Int(i64),
    Bulk(Vec<u8>),
    /// A null: `SET … NX` on a key that exists, `GET` of a missing key.
    Nil,
    /// An array, set, map (keys and values in turn) or push.
    Array(Vec<Reply>),
}

/// Where one value starts and how far it has been read.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

/// A value is incomplete (`Ok(None)`: read more), complete, or not RESP (`Err`).
type Parsed<T> = Result<Option<T>, String>;

impl<'a> Cursor<'a> {
    fn line(&mut self) -> Option<&'a [u8]> {
        let rest = &self.buf[self.at..];
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        self.at += end + 2;
        Some(&rest[..end])
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let rest = &self.buf[self.at..];
        if rest.len() < n + 2 {
            return None;
        }
        self.at += n + 2;
        Some(&rest[..n])
    }

    fn value(&mut self) -> Parsed<Reply> {
        let Some(line) = self.line() else { return Ok(None) };
        let Some((&kind, rest)) = line.split_first() else {
            return Err("an empty line".into());
        };
        let text = String::from_utf8_lossy(rest).into_owned();
        let number = || text.parse::<i64>().map_err(|_| format!("not a number: {text:?}"));
        Ok(Some(match kind {
            b'+' | b',' | b'(' => Reply::Status(text),
            b'-' => Reply::Error(text),
            b':' => Reply::Int(number()?),
            b'#' => Reply::Int(i64::from(text == "t")),
            b'_' => Reply::Nil,
            b'$' | b'=' | b'!' => match usize::try_from(number()?) {
                Err(_) => Reply::Nil, // $-1
                Ok(n) => {
                    let Some(data) = self.bytes(n) else { return Ok(None) };
                    if kind == b'!' {
                        Reply::Error(String::from_utf8_lossy(data).into_owned())
                    } else {
                        Reply::Bulk(data.to_vec())
                    }
                }
            },
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let Ok(n) = usize::try_from(number()?) else { return Ok(Some(Reply::Nil)) };
                let n = if matches!(kind, b'%' | b'|') { 2 * n } else { n };
                let mut items = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let Some(item) = self.value()? else { return Ok(None) };
                    items.push(item);
                }
                if kind == b'|' {
                    return self.value(); // an attribute: the reply is the value after it
                }
                Reply::Array(items)
            }
            other => return Err(format!("a line starting with {:?}", char::from(other))),
        }))
    }
}

/// The reply at the start of `buf` and its length in bytes.
pub(crate) fn reply(buf: &[u8]) -> Parsed<(usize, Reply)> {
    let mut cursor = Cursor { buf, at: 0 };
    Ok(cursor.value()?.map(|value| (cursor.at, value)))
}

/// The command at the start of `buf` (its words) and its length in bytes: an array of bulk
/// strings, or an inline command (a line of words).
pub(crate) fn command(buf: &[u8]) -> Parsed<(usize, Vec<Vec<u8>>)> {
    let mut cursor = Cursor { buf, at: 0 };
    if buf.first() != Some(&b'*') {
        let Some(line) = cursor.line() else { return Ok(None) };
        let words = line.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
        return Ok(Some((cursor.at, words.map(<[u8]>::to_vec).collect())));
    }
    let Some(Reply::Array(items)) = cursor.value()? else { return Ok(None) };
    let words = items.into_iter().map(|item| match item {
        Reply::Bulk(word) => Ok(word),
        other => Err(format!("a command word that is not a bulk string: {other:?}")),
    });
    Ok(Some((cursor.at, words.collect::<Result<_, _>>()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_end_where_they_end() {
        assert_eq!(reply(b"+OK\r\n:1"), Ok(Some((5, Reply::Status("OK".into())))));
        assert_eq!(reply(b"$-1\r\n"), Ok(Some((5, Reply::Nil))));
        assert_eq!(reply(b"$3\r\nab"), Ok(None));
        assert_eq!(reply(b"*2\r\n:1\r\n$1\r\nx\r\n"),
                   Ok(Some((15, Reply::Array(vec![Reply::Int(1), Reply::Bulk(b"x".to_vec())])))));
        assert_eq!(reply(b"-NOSCRIPT No matching script\r\n").unwrap().unwrap().1,
                   Reply::Error("NOSCRIPT No matching script".into()));
        assert_eq!(reply(b"|1\r\n+a\r\n+b\r\n:7\r\n"), Ok(Some((16, Reply::Int(7)))));
        assert!(reply(b"?\r\n").is_err());
    }

    #[test]
    fn commands_have_words() {
        let set = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n";
        assert_eq!(command(set), Ok(Some((27, vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]))));
        assert_eq!(command(b"PING\r\n"), Ok(Some((6, vec![b"PING".to_vec()]))));
        assert_eq!(command(b"*2\r\n$3\r\nGET\r\n"), Ok(None));
    }
}
