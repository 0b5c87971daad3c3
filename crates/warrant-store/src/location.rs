//! Where a store is, read once from what a user writes (`--store`, `WARRANT_STORE`, a tenant's
//! location), for every crate that opens one: the engine's store URL and the service's tenant
//! location both parse here, so that percent-encoding, libpq's two forms and several hosts are
//! handled in one place rather than split by hand in each.
//!
//! A PostgreSQL location is a libpq connection string in either of its forms, a URI
//! (`postgres://user:pass@h1:5432,h2:5433/db?sslmode=disable`) or keywords
//! (`host=h1,h2 port=5432,5433 dbname=db`), with one parameter of warrant's own, `schema`, taken
//! out of it before the rest is handed to the PostgreSQL client. The rest is checked here with the
//! client's own parser, so that a mistyped option is refused when the location is read, not at
//! the first connection. Errors never repeat the text: a connection string may hold a password.

use std::path::PathBuf;
use std::str::FromStr;

/// Where a store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite path (`sqlite:PATH`): a file, or a folder where its caller keeps several.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string without `schema`, and the schema to use.
    Postgres {
        /// The connection string as the PostgreSQL client reads it, `schema` taken out.
        conninfo: String,
        /// The schema: a lowercase SQL name, the caller's default where none is given.
        schema: String,
    },
}

/// Why a location does not read; its text is never repeated, as it may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    /// Neither form: not `sqlite:…`, not a PostgreSQL URI, not libpq keywords.
    #[error("give `sqlite:PATH`, `postgres://…` or libpq keywords (`host=… dbname=…`)")]
    Form,
    /// `sqlite:` with nothing after it.
    #[error("`sqlite:` needs a path")]
    EmptyPath,
    /// The schema is not a lowercase SQL name.
    #[error("`schema={0}` is not a lowercase SQL name (a to z, 0 to 9 and `_`, not first a digit)")]
    Schema(String),
    /// `schema` given twice.
    #[error("`schema` is given twice")]
    SchemaTwice,
    /// A keyword value opened with `'` and not closed.
    #[error("the value of `{0}` opens a quote it does not close")]
    Unquoted(String),
    /// A keyword form's word without `=`.
    #[error("`{0}` is not `keyword=value`")]
    Keyword(String),
    /// The PostgreSQL client refuses the connection string (its words; they name the option).
    #[error("the connection string does not read: {0}")]
    Conninfo(String),
}

impl Location {
    /// Reads `text`, with `default_schema` where a PostgreSQL location names none.
    pub fn parse(text: &str, default_schema: &str) -> Result<Location, LocationError> {
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(LocationError::EmptyPath);
            }
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        let (conninfo, schema) = if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            uri_without_schema(text)?
        } else if looks_like_keywords(text) {
            keywords_without_schema(text)?
        } else {
            return Err(LocationError::Form);
        };
        let schema = schema.unwrap_or_else(|| default_schema.to_owned());
        if !is_sql_name(&schema) {
            return Err(LocationError::Schema(schema));
        }
        // The client's own reading: the URI's percent-encoding, several hosts and ports, every
        // option it knows. Its message names the option at fault and not its value.
        tokio_postgres::Config::from_str(&conninfo).map_err(|e| {
            // The client's own words are in the error's source ("unknown option `colour`").
            let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
            LocationError::Conninfo(why)
        })?;
        Ok(Location::Postgres { conninfo, schema })
    }
}

/// `text` as an error may show it: a URI's password replaced by `…`, a keyword form named
/// rather than repeated (its `password=` may be anywhere in it), anything else as written.
pub fn shown(text: &str) -> String {
    if looks_like_keywords(text) && !text.contains("://") {
        return "libpq keywords".into();
    }
    let Some((scheme, rest)) = text.split_once("://") else { return text.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user, hosts)) if user.contains(':') => {
            let name = user.split_once(':').map_or(user, |(name, _)| name);
            format!("{scheme}://{name}:…@{hosts}{tail}")
        }
        _ => text.to_owned(),
    }
}

/// Whether `name` is safe as an unquoted, lowercase SQL identifier.
fn is_sql_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The URI form: `schema` taken out of its query, decoded; the other parameters kept as written,
/// percent-encoding and order included, for the client to decode.
fn uri_without_schema(text: &str) -> Result<(String, Option<String>), LocationError> {
    // A `?` inside the user or password is percent-encoded in a URI, so the first one begins the
    // query; a `#` ends it.
    let text = text.split_once('#').map_or(text, |(before, _)| before);
    let Some((base, query)) = text.split_once('?') else { return Ok((text.to_owned(), None)) };
    let mut schema = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let name = pair.split_once('=').map_or(pair, |(name, _)| name);
        if decoded(name) == "schema" {
            if schema.is_some() {
                return Err(LocationError::SchemaTwice);
            }
            schema = Some(decoded(pair.split_once('=').map_or("", |(_, value)| value)));
        } else {
            rest.push(pair);
        }
    }
    let conninfo = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
    Ok((conninfo, schema))
}

/// A query component decoded: `%XX` and `+` as a form encodes them, as the client decodes the
/// parameters it reads.
fn decoded(component: &str) -> String {
    form_urlencoded::parse(format!("k={component}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// Whether `text` begins as libpq's keyword form does: a keyword, then `=`.
fn looks_like_keywords(text: &str) -> bool {
    let text = text.trim_start();
    let word: String = text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    !word.is_empty() && text[word.len()..].trim_start().starts_with('=')
}

/// The keyword form: `schema=…` taken out, every other `keyword=value` kept as written (quoted
/// values with `\'` and `\\` as libpq reads them).
fn keywords_without_schema(text: &str) -> Result<(String, Option<String>), LocationError> {
    let mut schema = None;
    let mut rest = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else { break };
        let mut keyword = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            keyword.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return Err(LocationError::Keyword(keyword));
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(LocationError::Unquoted(keyword)),
                    Some((_, '\'')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, c)) => value.push(c),
                        None => return Err(LocationError::Unquoted(keyword)),
                    },
                    Some((_, c)) => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                value.push(if c == '\\' { chars.next().map_or(c, |(_, next)| next) } else { c });
            }
        }
        let end = chars.peek().map_or(text.len(), |&(at, _)| at);
        if keyword == "schema" {
            if schema.is_some() {
                return Err(LocationError::SchemaTwice);
            }
            schema = Some(value);
        } else {
            rest.push(text[start..end].trim_end());
        }
    }
    Ok((rest.join(" "), schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(text: &str) -> Result<(String, String), LocationError> {
        match Location::parse(text, "warrant")? {
            Location::Postgres { conninfo, schema } => Ok((conninfo, schema)),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn sqlite_takes_any_path_and_refuses_none() {
        assert_eq!(Location::parse("sqlite:a b/c.db", "x"), Ok(Location::Sqlite("a b/c.db".into())));
        assert_eq!(Location::parse("sqlite:", "x"), Err(LocationError::EmptyPath));
    }

    #[test]
    fn a_uri_gives_up_its_schema_decoded_and_keeps_the_rest_as_written() {
        assert_eq!(pg("postgres://u@h/db"), Ok(("postgres://u@h/db".into(), "warrant".into())));
        assert_eq!(
            pg("postgresql://u:p%40ss%3Fw@h:5433/db?sslmode=disable&schema=t%5Fone&connect_timeout=5"),
            Ok(("postgresql://u:p%40ss%3Fw@h:5433/db?sslmode=disable&connect_timeout=5".into(), "t_one".into()))
        );
        // Several hosts, for failover, as the client reads them.
        let (conninfo, schema) =
            pg("postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&schema=s").unwrap();
        assert_eq!(
            (conninfo.as_str(), schema.as_str()),
            ("postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write", "s")
        );
        let config = tokio_postgres::Config::from_str(&conninfo).unwrap();
        assert_eq!(config.get_hosts().len(), 2);
        assert_eq!(config.get_ports(), [5432, 5433]);
        assert_eq!(config.get_password(), None);
        let config = tokio_postgres::Config::from_str(&pg("postgres://u:p%40ss@h/db").unwrap().0).unwrap();
        assert_eq!(config.get_password(), Some(&b"p@ss"[..]));
    }

    #[test]
    fn keywords_give_up_their_schema_and_keep_the_rest_quoted_as_written() {
        assert_eq!(
            pg("host=h1,h2 port=5432,5433 dbname=test schema=t_one user=u"),
            Ok(("host=h1,h2 port=5432,5433 dbname=test user=u".into(), "t_one".into()))
        );
        let (conninfo, schema) = pg("  host = h  password='a b\\' c'  schema = 's_2' dbname=d ").unwrap();
        assert_eq!(schema, "s_2");
        assert_eq!(conninfo, "host = h password='a b\\' c' dbname=d");
        let config = tokio_postgres::Config::from_str(&conninfo).unwrap();
        assert_eq!(config.get_password(), Some(&b"a b' c"[..]));
        assert_eq!(pg("host=h dbname=d password='open"), Err(LocationError::Unquoted("password".into())));
        assert_eq!(pg("host=h dbname"), Err(LocationError::Keyword("dbname".into())));
    }

    #[test]
    fn a_bad_schema_a_second_schema_and_an_unknown_option_are_refused_without_the_text() {
        assert_eq!(pg("postgres://h/db?schema=Bad"), Err(LocationError::Schema("Bad".into())));
        assert_eq!(pg("postgres://h/db?schema="), Err(LocationError::Schema(String::new())));
        assert_eq!(pg("postgres://h/db?schema=1a"), Err(LocationError::Schema("1a".into())));
        assert_eq!(pg("postgres://h/db?schema=a&schema=b"), Err(LocationError::SchemaTwice));
        assert_eq!(pg("host=h schema=a schema=b"), Err(LocationError::SchemaTwice));
        let unknown = pg("postgres://u:secret@h/db?colour=blue").unwrap_err();
        assert!(matches!(&unknown, LocationError::Conninfo(m) if m.contains("colour")), "{unknown}");
        assert!(!unknown.to_string().contains("secret"), "{unknown}");
        assert_eq!(Location::parse("mysql://h/db", "x"), Err(LocationError::Form));
        assert_eq!(Location::parse("", "x"), Err(LocationError::Form));
    }

    #[test]
    fn a_location_is_shown_without_its_password() {
        assert_eq!(shown("postgres://u:se%40cret@h1,h2:5433/db?schema=s"), "postgres://u:…@h1,h2:5433/db?schema=s");
        assert_eq!(shown("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(shown("host=h password=secret"), "libpq keywords");
        assert_eq!(shown("mysql://u:p@h/db"), "mysql://u:…@h/db");
        assert_eq!(shown("sqlite:x.db"), "sqlite:x.db");
    }
}
