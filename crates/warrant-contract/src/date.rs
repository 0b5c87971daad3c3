//! Dates as typed expressions (rule 5): the model says which day it understood ("next Tuesday",
//! "in three days", "next Christmas") as a [`DateExpr`], and code computes the day from the
//! turn's instant, time zone and locale. The model never writes the date it computed itself.
//!
//! Nothing here reads a clock or the environment: the turn's instant, IANA time zone and locale
//! arrive in a [`TurnClock`], and time zones come from the database bundled into the binary, so
//! the same turn gives the same date on every machine. `docs/dates.md` defines every form and
//! what each locale means by `next`, `this` and `last`; its worked examples are the tests below.

use std::fmt;

use jiff::civil::{Date, Weekday};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{Span, Timestamp};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::visible;

/// The largest `offset_days` accepted, about ten years: far enough for any booking, near
/// enough that a model's slip (a year written as a day count) is refused, not obeyed.
pub const MAX_OFFSET_DAYS: i32 = 3660;

/// The largest `offset_weeks` accepted: the whole weeks within [`MAX_OFFSET_DAYS`].
pub const MAX_OFFSET_WEEKS: i32 = MAX_OFFSET_DAYS / 7;

/// A day as the model understood it, for code to evaluate. One form per expression; the wire
/// shapes are in `docs/dates.md`.
///
/// The variants are public so callers can build expressions in code; [`evaluate`] checks
/// every bound again, so a value built by hand cannot do what the wire form may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateExpr {
    /// `{"date":"2026-12-01"}`: an absolute calendar date.
    Date(Date),
    /// `{"offset_days":3}`: days after (or, negative, before) the turn's local date.
    OffsetDays(i32),
    /// `{"offset_weeks":2}`: seven days per week after (or before) the turn's local date.
    OffsetWeeks(i32),
    /// `{"relative":"tomorrow"}`.
    Relative(RelativeDay),
    /// `{"weekday":"tue","which":"next"}`: a day of a calendar week, by the locale's weeks.
    Weekday {
        /// The day of the week.
        weekday: Weekday,
        /// Which week: the current one, the next or the previous.
        which: Which,
    },
    /// `{"month":12,"day":25,"which":"next"}`: a day of the year, such as a holiday.
    MonthDay {
        /// 1 to 12.
        month: i8,
        /// 1 to the month's longest length (29 for February).
        day: i8,
        /// The coming occurrence, the one of this year, or the latest past one.
        which: Which,
    },
}

/// The named days next to today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RelativeDay {
    /// The turn's local date.
    Today,
    /// The day after it.
    Tomorrow,
    /// The day before it.
    Yesterday,
}

/// Which occurrence of a weekday or a month-day an expression means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    /// A weekday: in the calendar week after the current one. A month-day: its first
    /// occurrence after today.
    Next,
    /// In the current calendar week (weekday) or year (month-day), today or later.
    This,
    /// A weekday: in the calendar week before the current one. A month-day: its latest
    /// occurrence before today.
    Last,
}

/// The locales whose reading of `next`, `this` and `last` warrant defines. A closed set: a tag
/// outside it is an input error, never a guess at the nearest one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Locale {
    /// `en-US`: weeks start on Sunday.
    EnUs,
    /// `en-GB`: weeks start on Monday.
    EnGb,
    /// `ko-KR`: weeks start on Monday.
    KoKr,
}

impl Locale {
    /// Every supported locale.
    pub const ALL: [Locale; 3] = [Locale::EnUs, Locale::EnGb, Locale::KoKr];

    /// The locale whose BCP 47 tag is exactly `tag` (`en-US`, `en-GB`, `ko-KR`, case included).
    pub fn from_tag(tag: &str) -> Result<Locale, DateError> {
        Locale::ALL.into_iter().find(|locale| locale.tag() == tag).ok_or_else(|| DateError::UnknownLocale(visible(tag)))
    }

    /// The BCP 47 tag.
    pub const fn tag(self) -> &'static str {
        match self {
            Locale::EnUs => "en-US",
            Locale::EnGb => "en-GB",
            Locale::KoKr => "ko-KR",
        }
    }

    /// The first day of a calendar week in this locale.
    pub const fn week_start(self) -> Weekday {
        match self {
            Locale::EnUs => Weekday::Sunday,
            Locale::EnGb | Locale::KoKr => Weekday::Monday,
        }
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())
    }
}

impl std::str::FromStr for Locale {
    type Err = DateError;

    fn from_str(tag: &str) -> Result<Locale, DateError> {
        Locale::from_tag(tag)
    }
}

/// What a turn knows about "now": its instant, the user's IANA time zone and locale. Built
/// from the turn request; every relative date of the turn is computed from it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnClock {
    /// The instant of the turn.
    pub at: Timestamp,
    /// The user's time zone, which decides the local date.
    pub time_zone: TimeZone,
    /// The user's locale, which decides where a week starts.
    pub locale: Locale,
}

impl TurnClock {
    /// Checks the turn's `at` (RFC 3339 with an offset, e.g. `2026-11-30T03:00:00Z`),
    /// `time_zone` (an IANA name spelled exactly as the database spells it) and `locale`
    /// (a tag of [`Locale`]), in that order; the error names the first field at fault.
    pub fn new(at_rfc3339: &str, time_zone: &str, locale: &str) -> Result<TurnClock, DateError> {
        let at = parse_instant(at_rfc3339)?;
        let time_zone = time_zone_named(time_zone)?;
        let locale = Locale::from_tag(locale)?;
        Ok(TurnClock { at, time_zone, locale })
    }

    /// The turn's local date: its instant seen from its time zone.
    pub fn today(&self) -> Date {
        self.time_zone.to_datetime(self.at).date()
    }
}

/// Parses an RFC 3339 date-time strictly: the turn's `at`, and the outbound request's `at` and
/// `due`. jiff's parser accepts a wider grammar (week dates, bracketed time zone annotations,
/// missing seconds, offsets up to ±25:59), so the shape is checked here first: an instant is
/// one spelling of one thing, with an offset RFC 3339 allows (hours 00 to 23, minutes 00 to
/// 59). Any such instant jiff can represent is accepted.
pub fn parse_instant(text: &str) -> Result<Timestamp, DateError> {
    let invalid = || DateError::InvalidInstant(visible(text));
    if !is_rfc3339(text.as_bytes()) {
        return Err(invalid());
    }
    text.parse::<Timestamp>().map_err(|_| invalid())
}

/// An instant as Cedar's `datetime` reads it: UTC, to the millisecond (a finer fraction is
/// cut off), `2026-11-30T03:00:00.000Z`. `None` outside the years 0000 to 9999, which Cedar's
/// form cannot write.
pub fn cedar_datetime(at: Timestamp) -> Option<String> {
    let utc = TimeZone::UTC.to_datetime(at);
    (0..=9999).contains(&utc.year()).then(|| {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            utc.year(),
            utc.month(),
            utc.day(),
            utc.hour(),
            utc.minute(),
            utc.second(),
            utc.millisecond()
        )
    })
}

/// Whether `b` has the shape `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`, with the
/// lowercase `t` and `z` RFC 3339 also allows, and an offset within RFC 3339's ranges. The
/// ranges of the date and time (month 13, hour 25) are left to jiff.
fn is_rfc3339(b: &[u8]) -> bool {
    const HEAD: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let Some((head, mut rest)) = b.split_at_checked(HEAD.len()) else {
        return false;
    };
    let head_ok = head.iter().zip(HEAD).all(|(&c, &want)| match want {
        b'd' => c.is_ascii_digit(),
        b'T' => c == b'T' || c == b't',
        _ => c == want,
    });
    if !head_ok {
        return false;
    }
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return false;
        }
        rest = fraction.get(digits..).unwrap_or_default();
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) && (*h1, *h2) <= (b'2', b'3') && *m1 <= b'5'
        }
        _ => false,
    }
}

/// The time zone named exactly `name` in the bundled database. The database's own lookup
/// ignores ASCII case; warrant does not, because a time zone is an identifier from a closed
/// set, and `america/new_york` is not one of its members.
fn time_zone_named(name: &str) -> Result<TimeZone, DateError> {
    let unknown = || DateError::UnknownTimeZone(visible(name));
    let zone = TimeZoneDatabase::bundled().get(name).map_err(|_| unknown())?;
    if zone.is_unknown() || zone.iana_name() != Some(name) {
        return Err(unknown());
    }
    Ok(zone)
}

/// Why a date expression, or the clock it is evaluated with, gives no date. Each variant has a
/// stable code ([`DateError::code`]); all of them fail closed: the act gets no date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DateError {
    /// The turn's `at` is not an RFC 3339 date-time with an offset, or is out of range.
    #[error("`at` is not an RFC 3339 date-time with an offset such as `2026-11-30T03:00:00Z`: `{0}`")]
    InvalidInstant(String),
    /// The turn's `time_zone` is not an IANA time zone name, spelled exactly.
    #[error("`time_zone` is not an IANA time zone name such as `America/New_York`: `{0}`")]
    UnknownTimeZone(String),
    /// The turn's `locale` is not one of the supported tags.
    #[error("`locale` is not one of `en-US`, `en-GB`, `ko-KR`: `{0}`")]
    UnknownLocale(String),
    /// The expression is not one of the forms: not an object, an unknown or repeated field, no
    /// form or two, a missing or stray companion field, a value of the wrong type or outside
    /// its closed set. The message says which.
    #[error("{0}")]
    InvalidExpr(String),
    /// `date` is not a calendar date written `YYYY-MM-DD`, e.g. `2026-02-30`.
    #[error("`date` is not a calendar date written as YYYY-MM-DD: `{0}`")]
    InvalidDate(String),
    /// `month` and `day` name no day of any year, e.g. month 13 or April 31.
    #[error("`month` {month} and `day` {day} name no day of any year")]
    InvalidMonthDay {
        /// The month as given.
        month: i64,
        /// The day as given.
        day: i64,
    },
    /// An offset is beyond its bound ([`MAX_OFFSET_DAYS`], [`MAX_OFFSET_WEEKS`]).
    #[error("`{field}` is `{value}`, beyond the bound of ±{bound}")]
    OffsetOutOfRange {
        /// `offset_days` or `offset_weeks`.
        field: &'static str,
        /// The offset as given.
        value: String,
        /// The largest magnitude accepted.
        bound: i32,
    },
    /// The day computed falls outside the years -9999 to 9999.
    #[error("the date falls outside the supported years -9999 to 9999")]
    DateOutOfRange,
    /// `which: this` names a day of the current week or year that is already past. warrant
    /// does not move it forward or back: which day was meant is the model's question to ask.
    #[error("`this` names {date}, which is before the turn's local date {today}")]
    DateInPastForThis {
        /// The day `this` names.
        date: Date,
        /// The turn's local date.
        today: Date,
    },
    /// `which: this` names a month-day the current year does not have (February 29 in a common
    /// year).
    #[error("{year} has no {month:02}-{day:02}")]
    DayNotInYear {
        /// The month.
        month: i8,
        /// The day.
        day: i8,
        /// The turn's local year.
        year: i16,
    },
}

impl DateError {
    /// The stable code of the error, as the turn's response and replay record carry it.
    pub fn code(&self) -> &'static str {
        match self {
            DateError::InvalidInstant(_) => "invalid_instant",
            DateError::UnknownTimeZone(_) => "unknown_time_zone",
            DateError::UnknownLocale(_) => "unknown_locale",
            DateError::InvalidExpr(_) => "invalid_date_expr",
            DateError::InvalidDate(_) | DateError::InvalidMonthDay { .. } => "invalid_date",
            DateError::OffsetOutOfRange { .. } => "offset_out_of_range",
            DateError::DateOutOfRange => "date_out_of_range",
            DateError::DateInPastForThis { .. } => "date_in_past_for_this",
            DateError::DayNotInYear { .. } => "day_not_in_year",
        }
    }
}

/// Every field a date expression may have, in the order messages list them.
const FIELDS: [&str; 8] = ["date", "offset_days", "offset_weeks", "relative", "weekday", "month", "day", "which"];

/// The fields that each start a form; exactly one must be present.
const FORMS: [&str; 6] = ["date", "offset_days", "offset_weeks", "relative", "weekday", "month"];

impl DateExpr {
    /// Reads a date expression from its JSON value, all or nothing.
    pub fn from_json(value: &Value) -> Result<DateExpr, DateError> {
        let Value::Object(map) = value else {
            return Err(DateError::InvalidExpr(format!(
                "a date expression must be a JSON object, not `{}`",
                visible(&value.to_string())
            )));
        };
        DateExpr::from_fields(map.iter().map(|(k, v)| (k.as_str(), v)))
    }

    fn from_fields<'v>(fields: impl Iterator<Item = (&'v str, &'v Value)>) -> Result<DateExpr, DateError> {
        let mut slots: [Option<&Value>; FIELDS.len()] = [None; FIELDS.len()];
        for (key, value) in fields {
            let slot = FIELDS.iter().position(|&f| f == key).and_then(|i| slots.get_mut(i)).ok_or_else(|| {
                DateError::InvalidExpr(format!("unknown field `{}` in a date expression", visible(key)))
            })?;
            if slot.is_some() {
                return Err(DateError::InvalidExpr(format!("field `{key}` appears twice in a date expression")));
            }
            *slot = Some(value);
        }
        let get = |name: &str| FIELDS.iter().position(|&f| f == name).and_then(|i| slots.get(i).copied().flatten());
        let mut present = FORMS.iter().copied().filter(|&f| get(f).is_some());
        let form = match (present.next(), present.next()) {
            (Some(form), None) => form,
            (None, _) => {
                return Err(DateError::InvalidExpr(
                    "a date expression needs one of `date`, `offset_days`, `offset_weeks`, `relative`, `weekday`, `month`"
                        .to_owned(),
                ));
            }
            (Some(first), Some(second)) => {
                return Err(DateError::InvalidExpr(format!(
                    "a date expression has both `{first}` and `{second}`; give exactly one form"
                )));
            }
        };
        // Companion fields belong to one form each; a stray one means the model meant something
        // this form cannot say, so it is refused rather than ignored.
        let companions: &[&str] = match form {
            "weekday" => &["which"],
            "month" => &["day", "which"],
            _ => &[],
        };
        for stray in ["day", "which"] {
            if get(stray).is_some() && !companions.contains(&stray) {
                return Err(DateError::InvalidExpr(format!("`{stray}` does not belong with `{form}`")));
            }
        }
        for needed in companions {
            if get(needed).is_none() {
                return Err(DateError::InvalidExpr(format!("`{form}` needs `{needed}`")));
            }
        }
        let field =
            |name: &'static str| get(name).ok_or_else(|| DateError::InvalidExpr(format!("`{form}` needs `{name}`")));
        match form {
            "date" => parse_date(field("date")?).map(DateExpr::Date),
            "offset_days" => offset(field("offset_days")?, "offset_days", MAX_OFFSET_DAYS).map(DateExpr::OffsetDays),
            "offset_weeks" => {
                offset(field("offset_weeks")?, "offset_weeks", MAX_OFFSET_WEEKS).map(DateExpr::OffsetWeeks)
            }
            "relative" => closed(field("relative")?, "relative", &RELATIVE_DAYS).map(DateExpr::Relative),
            "weekday" => Ok(DateExpr::Weekday {
                weekday: closed(field("weekday")?, "weekday", &WEEKDAYS)?,
                which: closed(field("which")?, "which", &WHICH)?,
            }),
            // `month`, the last of FORMS.
            _ => {
                let month = integer(field("month")?, "month")?;
                let day = integer(field("day")?, "day")?;
                let which = closed(field("which")?, "which", &WHICH)?;
                let (Ok(m), Ok(d)) = (i8::try_from(month), i8::try_from(day)) else {
                    return Err(DateError::InvalidMonthDay { month, day });
                };
                check_month_day(m, d)?;
                Ok(DateExpr::MonthDay { month: m, day: d, which })
            }
        }
    }
}

/// The wire ids of the weekdays, Monday first.
const WEEKDAYS: [(&str, Weekday); 7] = [
    ("mon", Weekday::Monday),
    ("tue", Weekday::Tuesday),
    ("wed", Weekday::Wednesday),
    ("thu", Weekday::Thursday),
    ("fri", Weekday::Friday),
    ("sat", Weekday::Saturday),
    ("sun", Weekday::Sunday),
];

const RELATIVE_DAYS: [(&str, RelativeDay); 3] =
    [("today", RelativeDay::Today), ("tomorrow", RelativeDay::Tomorrow), ("yesterday", RelativeDay::Yesterday)];

const WHICH: [(&str, Which); 3] = [("next", Which::Next), ("this", Which::This), ("last", Which::Last)];

/// The wire id of `value` in `table`; every value of the type is in its table.
fn id_of<T: Copy + PartialEq>(table: &[(&'static str, T)], value: T) -> &'static str {
    table.iter().find(|(_, v)| *v == value).map_or("", |(id, _)| id)
}

/// A string field whose value must be one of the ids of `table`, exactly: `Tue` and
/// `tuesday` are not `tue`.
fn closed<T: Copy>(value: &Value, field: &str, table: &[(&str, T)]) -> Result<T, DateError> {
    let found = value.as_str().and_then(|s| table.iter().find(|(id, _)| *id == s));
    found.map(|(_, v)| *v).ok_or_else(|| {
        let ids: Vec<&str> = table.iter().map(|(id, _)| *id).collect();
        DateError::InvalidExpr(format!(
            "`{field}` must be one of {}, not `{}`",
            ids.join(", "),
            visible(&value.to_string())
        ))
    })
}

/// A JSON integer (not `3.0`, not `"3"`) that fits an `i64`.
fn integer(value: &Value, field: &str) -> Result<i64, DateError> {
    let shown = || visible(&value.to_string());
    if let Some(n) = value.as_i64() {
        return Ok(n);
    }
    Err(DateError::InvalidExpr(if value.is_u64() {
        format!("`{field}` is far too large: `{}`", shown())
    } else {
        format!("`{field}` must be an integer, not `{}`", shown())
    }))
}

fn offset(value: &Value, field: &'static str, bound: i32) -> Result<i32, DateError> {
    let out_of_range = || DateError::OffsetOutOfRange { field, value: value.to_string(), bound };
    // An integer too large even for an i64 is still an integer, only far out of bounds.
    if value.is_u64() && !value.is_i64() {
        return Err(out_of_range());
    }
    let n = integer(value, field)?;
    i32::try_from(n).ok().filter(|n| n.unsigned_abs() <= bound.unsigned_abs()).ok_or_else(out_of_range)
}

/// `YYYY-MM-DD`, exactly: jiff's own parser also takes `20261201` and signed six-digit years.
fn parse_date(value: &Value) -> Result<Date, DateError> {
    let Some(text) = value.as_str() else {
        return Err(DateError::InvalidExpr(format!(
            "`date` must be a string written as YYYY-MM-DD, not `{}`",
            visible(&value.to_string())
        )));
    };
    let invalid = || DateError::InvalidDate(visible(text));
    let b = text.as_bytes();
    let shaped = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
    if !shaped {
        return Err(invalid());
    }
    let number = |range: std::ops::Range<usize>| text.get(range).and_then(|s| s.parse::<i16>().ok());
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return Err(invalid());
    };
    let (Ok(month), Ok(day)) = (i8::try_from(month), i8::try_from(day)) else {
        return Err(invalid());
    };
    Date::new(year, month, day).map_err(|_| invalid())
}

/// Whether `month`-`day` is a day of some year: February 29 is, February 30 is not.
fn check_month_day(month: i8, day: i8) -> Result<(), DateError> {
    // 2024 is a leap year, so every month-day that exists in any year exists in it.
    Date::new(2024, month, day)
        .map(|_| ())
        .map_err(|_| DateError::InvalidMonthDay { month: i64::from(month), day: i64::from(day) })
}

impl<'de> Deserialize<'de> for DateExpr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<DateExpr, D::Error> {
        let fields = deserializer.deserialize_map(ObjectFields { what: "a date expression" })?;
        DateExpr::from_fields(fields.iter().map(|(k, v)| (k.as_str(), v))).map_err(de::Error::custom)
    }
}

/// Collects the fields of one JSON object in order, refusing a key given twice. A
/// `serde_json::Value` would keep only the last of two, and an expression read all or nothing
/// cannot silently drop half of itself. Shared with [`crate::money`].
pub(crate) struct ObjectFields {
    pub(crate) what: &'static str,
}

impl<'de> Visitor<'de> for ObjectFields {
    type Value = Vec<(String, Value)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} as a JSON object", self.what)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields: Vec<(String, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("field `{}` appears twice in {}", visible(&key), self.what)));
            }
            // Every form has at most three fields, so a long object is refused before it is
            // read further, and the repeat check above stays small.
            if fields.len() >= 8 {
                return Err(de::Error::custom(format!("{} has too many fields", self.what)));
            }
            let value = map.next_value::<Value>()?;
            fields.push((key, value));
        }
        Ok(fields)
    }
}

impl Serialize for DateExpr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            DateExpr::Date(date) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("date", &date.to_string())?;
                map.end()
            }
            DateExpr::OffsetDays(n) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("offset_days", &n)?;
                map.end()
            }
            DateExpr::OffsetWeeks(n) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("offset_weeks", &n)?;
                map.end()
            }
            DateExpr::Relative(day) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("relative", id_of(&RELATIVE_DAYS, day))?;
                map.end()
            }
            DateExpr::Weekday { weekday, which } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("weekday", id_of(&WEEKDAYS, weekday))?;
                map.serialize_entry("which", id_of(&WHICH, which))?;
                map.end()
            }
            DateExpr::MonthDay { month, day, which } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("month", &month)?;
                map.serialize_entry("day", &day)?;
                map.serialize_entry("which", id_of(&WHICH, which))?;
                map.end()
            }
        }
    }
}

/// The day `expr` names, seen from the turn's local date. The definitions, per locale, are in
/// `docs/dates.md`.
pub fn evaluate(expr: &DateExpr, clock: &TurnClock) -> Result<Date, DateError> {
    let today = clock.today();
    match *expr {
        DateExpr::Date(date) => Ok(date),
        DateExpr::OffsetDays(n) => {
            if n.unsigned_abs() > MAX_OFFSET_DAYS.unsigned_abs() {
                return Err(DateError::OffsetOutOfRange {
                    field: "offset_days",
                    value: n.to_string(),
                    bound: MAX_OFFSET_DAYS,
                });
            }
            shift(today, i64::from(n))
        }
        DateExpr::OffsetWeeks(n) => {
            if n.unsigned_abs() > MAX_OFFSET_WEEKS.unsigned_abs() {
                return Err(DateError::OffsetOutOfRange {
                    field: "offset_weeks",
                    value: n.to_string(),
                    bound: MAX_OFFSET_WEEKS,
                });
            }
            shift(today, i64::from(n) * 7)
        }
        DateExpr::Relative(day) => shift(
            today,
            match day {
                RelativeDay::Today => 0,
                RelativeDay::Tomorrow => 1,
                RelativeDay::Yesterday => -1,
            },
        ),
        DateExpr::Weekday { weekday, which } => weekday_in_week(today, clock.locale, weekday, which),
        DateExpr::MonthDay { month, day, which } => month_day(today, month, day, which),
    }
}

/// `date` moved by `days`, or [`DateError::DateOutOfRange`] past the calendar's ends.
fn shift(date: Date, days: i64) -> Result<Date, DateError> {
    let span = Span::new().try_days(days).map_err(|_| DateError::DateOutOfRange)?;
    date.checked_add(span).map_err(|_| DateError::DateOutOfRange)
}

/// Days from the locale's first day of the week to `day`: 0 to 6.
fn days_into_week(day: Weekday, locale: Locale) -> i64 {
    let offset = match locale.week_start() {
        Weekday::Sunday => day.to_sunday_zero_offset(),
        _ => day.to_monday_zero_offset(),
    };
    i64::from(offset)
}

/// The weekday in the current (`this`), following (`next`) or previous (`last`) calendar
/// week, weeks starting on the locale's first day.
fn weekday_in_week(today: Date, locale: Locale, weekday: Weekday, which: Which) -> Result<Date, DateError> {
    let week_start = -days_into_week(today.weekday(), locale);
    let week = match which {
        Which::Next => 7,
        Which::This => 0,
        Which::Last => -7,
    };
    let date = shift(today, week_start + week + days_into_week(weekday, locale))?;
    if which == Which::This && date < today {
        return Err(DateError::DateInPastForThis { date, today });
    }
    Ok(date)
}

/// How many years a search for February 29 may need: the longest gap between leap years is
/// eight (2096 to 2104).
const LEAP_GAP: i16 = 8;

/// The month-day's occurrence this year (`this`, today or later), its first after today
/// (`next`) or its latest before today (`last`). February 29 skips the common years between.
fn month_day(today: Date, month: i8, day: i8, which: Which) -> Result<Date, DateError> {
    check_month_day(month, day)?;
    let year = today.year();
    let in_year = |y: i16| Date::new(y, month, day).ok();
    match which {
        Which::This => {
            let date = in_year(year).ok_or(DateError::DayNotInYear { month, day, year })?;
            if date < today {
                return Err(DateError::DateInPastForThis { date, today });
            }
            Ok(date)
        }
        Which::Next => (0..=LEAP_GAP)
            .filter_map(|k| year.checked_add(k))
            .filter_map(in_year)
            .find(|&date| date > today)
            .ok_or(DateError::DateOutOfRange),
        Which::Last => (0..=LEAP_GAP)
            .filter_map(|k| year.checked_sub(k))
            .filter_map(in_year)
            .find(|&date| date < today)
            .ok_or(DateError::DateOutOfRange),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use jiff::civil::date;
    use proptest::prelude::*;
    use serde_json::json;

    /// A clock at noon UTC of `today`, so the local date is `today` itself.
    fn noon(today: &str, locale: &str) -> TurnClock {
        TurnClock::new(&format!("{today}T12:00:00Z"), "UTC", locale).unwrap()
    }

    fn expr(value: Value) -> DateExpr {
        DateExpr::from_json(&value).unwrap()
    }

    fn eval(value: Value, today: &str, locale: &str) -> Result<Date, DateError> {
        evaluate(&DateExpr::from_json(&value)?, &noon(today, locale))
    }

    fn code(value: Value) -> &'static str {
        DateExpr::from_json(&value).unwrap_err().code()
    }

    // The worked examples of docs/dates.md are the specification; every row is checked here,
    // so the document and the code cannot drift apart.
    const DOC: &str = include_str!("../../../docs/dates.md");

    struct Row {
        line: usize,
        locales: Vec<Locale>,
        today: Date,
        expr: Value,
        want: Result<Date, String>,
    }

    /// The rows of the worked-example tables: `| locale | today | the user says | DateExpr | date |`.
    fn doc_rows() -> Vec<Row> {
        let mut rows = Vec::new();
        for (i, line) in DOC.lines().enumerate() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() != 7 || !line.starts_with('|') {
                continue;
            }
            let locales = match cells[1] {
                "any" => Locale::ALL.to_vec(),
                tag => match Locale::from_tag(tag) {
                    Ok(locale) => vec![locale],
                    Err(_) => continue,
                },
            };
            let line_no = i + 1;
            let (day, label) = cells[2].split_once(' ').expect("today is `YYYY-MM-DD (Ddd)`");
            let today: Date = day.parse().unwrap();
            let label = label.trim_matches(|c| c == '(' || c == ')');
            assert_eq!(label, today.strftime("%a").to_string(), "line {line_no}: wrong weekday for {day}");
            let expr: Value = serde_json::from_str(cells[4].trim_matches('`')).unwrap();
            let want = match cells[5].strip_prefix("error ") {
                Some(code) => Err(code.trim_matches('`').to_owned()),
                None => Ok(cells[5].split(' ').next().unwrap().parse::<Date>().unwrap()),
            };
            if let Ok(date) = want {
                let label = cells[5].split_once(' ').map(|(_, l)| l.trim_matches(|c| c == '(' || c == ')'));
                assert_eq!(label, Some(date.strftime("%a").to_string().as_str()), "line {line_no}");
            }
            rows.push(Row { line: line_no, locales, today, expr, want });
        }
        rows
    }

    #[test]
    fn every_worked_example_in_the_docs_holds() {
        let rows = doc_rows();
        for locale in Locale::ALL {
            let weekday_rows = rows.iter().filter(|r| r.locales == [locale] && r.expr.get("weekday").is_some()).count();
            assert!(weekday_rows >= 20, "{locale} has only {weekday_rows} weekday rows");
        }
        assert!(rows.iter().any(|r| r.expr.get("month").is_some()));
        for row in &rows {
            for &locale in &row.locales {
                let got = eval(row.expr.clone(), &row.today.to_string(), locale.tag()).map_err(|e| e.code().to_owned());
                assert_eq!(got, row.want, "docs/dates.md line {} in {locale}: {}", row.line, row.expr);
            }
        }
    }

    #[test]
    fn every_local_date_in_the_docs_holds() {
        let mut rows = 0;
        for (i, line) in DOC.lines().enumerate() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() != 5
                || !cells[1].starts_with("`")
                || !cells[1][1..].starts_with(|c: char| c.is_ascii_digit())
            {
                continue;
            }
            let (at, zone) = (cells[1].trim_matches('`'), cells[2].trim_matches('`'));
            let (day, label) = cells[3].split_once(' ').unwrap();
            let want: Date = day.parse().unwrap();
            assert_eq!(label, format!("({})", want.strftime("%a")), "line {}", i + 1);
            for locale in Locale::ALL {
                let clock = TurnClock::new(at, zone, locale.tag()).unwrap();
                assert_eq!(clock.today(), want, "docs/dates.md line {}", i + 1);
                assert_eq!(evaluate(&DateExpr::Relative(RelativeDay::Today), &clock), Ok(want));
            }
            rows += 1;
        }
        assert!(rows >= 10, "only {rows} local-date rows");
    }

    #[test]
    fn a_turn_at_3am_utc_is_still_the_evening_before_in_los_angeles() {
        let clock = TurnClock::new("2026-11-30T03:00:00Z", "America/Los_Angeles", "en-US").unwrap();
        assert_eq!(clock.today(), date(2026, 11, 29));
        assert_eq!(evaluate(&expr(json!({"relative": "today"})), &clock), Ok(date(2026, 11, 29)));
        assert_eq!(evaluate(&expr(json!({"relative": "tomorrow"})), &clock), Ok(date(2026, 11, 30)));
        assert_eq!(evaluate(&expr(json!({"offset_days": 3})), &clock), Ok(date(2026, 12, 2)));
    }

    #[test]
    fn the_time_zone_can_move_next_tuesday_by_a_week() {
        let next_tue = expr(json!({"weekday": "tue", "which": "next"}));
        let la = TurnClock::new("2026-11-30T03:00:00Z", "America/Los_Angeles", "en-GB").unwrap();
        let utc = TurnClock::new("2026-11-30T03:00:00Z", "UTC", "en-GB").unwrap();
        assert_eq!(evaluate(&next_tue, &la), Ok(date(2026, 12, 1)));
        assert_eq!(evaluate(&next_tue, &utc), Ok(date(2026, 12, 8)));
    }

    #[test]
    fn every_form_reads_from_its_wire_shape() {
        assert_eq!(expr(json!({"date": "2026-12-01"})), DateExpr::Date(date(2026, 12, 1)));
        assert_eq!(expr(json!({"offset_days": 3})), DateExpr::OffsetDays(3));
        assert_eq!(expr(json!({"offset_days": -3660})), DateExpr::OffsetDays(-3660));
        assert_eq!(expr(json!({"offset_weeks": 2})), DateExpr::OffsetWeeks(2));
        assert_eq!(expr(json!({"relative": "today"})), DateExpr::Relative(RelativeDay::Today));
        assert_eq!(expr(json!({"relative": "tomorrow"})), DateExpr::Relative(RelativeDay::Tomorrow));
        assert_eq!(expr(json!({"relative": "yesterday"})), DateExpr::Relative(RelativeDay::Yesterday));
        assert_eq!(
            expr(json!({"weekday": "tue", "which": "next"})),
            DateExpr::Weekday { weekday: Weekday::Tuesday, which: Which::Next }
        );
        assert_eq!(
            expr(json!({"month": 12, "day": 25, "which": "next"})),
            DateExpr::MonthDay { month: 12, day: 25, which: Which::Next }
        );
        let ids = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
        for (id, want) in ids.iter().zip([
            Weekday::Monday,
            Weekday::Tuesday,
            Weekday::Wednesday,
            Weekday::Thursday,
            Weekday::Friday,
            Weekday::Saturday,
            Weekday::Sunday,
        ]) {
            assert_eq!(
                expr(json!({"weekday": id, "which": "this"})),
                DateExpr::Weekday { weekday: want, which: Which::This }
            );
        }
    }

    #[test]
    fn every_form_writes_its_wire_shape_back() {
        for value in [
            json!({"date": "2026-12-01"}),
            json!({"offset_days": -3}),
            json!({"offset_weeks": 2}),
            json!({"relative": "yesterday"}),
            json!({"weekday": "sun", "which": "last"}),
            json!({"month": 2, "day": 29, "which": "this"}),
        ] {
            let parsed = expr(value.clone());
            assert_eq!(serde_json::to_value(parsed).unwrap(), value);
            let through_serde: DateExpr = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(through_serde, parsed);
        }
    }

    #[test]
    fn offsets_and_relative_days_count_from_the_local_date() {
        assert_eq!(eval(json!({"offset_days": 3}), "2026-12-30", "en-US"), Ok(date(2027, 1, 2)));
        assert_eq!(eval(json!({"offset_days": -1}), "2028-03-01", "en-US"), Ok(date(2028, 2, 29)));
        assert_eq!(eval(json!({"offset_days": 0}), "2026-12-30", "en-US"), Ok(date(2026, 12, 30)));
        assert_eq!(eval(json!({"offset_weeks": 2}), "2026-12-02", "en-GB"), Ok(date(2026, 12, 16)));
        assert_eq!(eval(json!({"offset_weeks": -1}), "2026-12-02", "ko-KR"), Ok(date(2026, 11, 25)));
        assert_eq!(eval(json!({"relative": "yesterday"}), "2026-01-01", "ko-KR"), Ok(date(2025, 12, 31)));
        assert_eq!(eval(json!({"date": "2024-02-29"}), "2026-01-01", "ko-KR"), Ok(date(2024, 2, 29)));
    }

    #[test]
    fn impossible_dates_are_errors() {
        for text in ["2026-02-30", "2026-13-01", "2026-00-10", "2026-04-31", "2027-02-29", "2026-12-00"] {
            assert_eq!(code(json!({ "date": text })), "invalid_date", "{text}");
        }
        // Other spellings jiff would take are not the wire form.
        for text in ["20261201", "2026-12-1", "+002026-12-01", "2026-12-01T00:00", " 2026-12-01", "2026/12/01", ""] {
            assert_eq!(code(json!({ "date": text })), "invalid_date", "{text}");
        }
        assert_eq!(code(json!({"date": 20261201})), "invalid_date_expr");
        for (month, day) in [(13, 1), (0, 1), (2, 30), (4, 31), (12, 32), (12, 0), (-1, 5), (300, 1)] {
            let err = DateExpr::from_json(&json!({"month": month, "day": day, "which": "next"})).unwrap_err();
            assert_eq!(err, DateError::InvalidMonthDay { month, day });
            assert_eq!(err.code(), "invalid_date");
        }
        // Built by hand, bypassing the parser, the same values are refused at evaluation.
        let clock = noon("2026-12-01", "en-US");
        let bad = DateExpr::MonthDay { month: 13, day: 1, which: Which::Next };
        assert_eq!(evaluate(&bad, &clock).unwrap_err().code(), "invalid_date");
    }

    #[test]
    fn february_29_goes_to_the_nearest_leap_year_for_next_and_last() {
        let leap = |which: &str, today: &str| eval(json!({"month": 2, "day": 29, "which": which}), today, "en-US");
        assert_eq!(leap("next", "2026-12-01"), Ok(date(2028, 2, 29)));
        assert_eq!(leap("next", "2028-02-29"), Ok(date(2032, 2, 29)));
        assert_eq!(leap("next", "2096-03-01"), Ok(date(2104, 2, 29)));
        assert_eq!(leap("last", "2104-02-28"), Ok(date(2096, 2, 29)));
        assert_eq!(leap("last", "2026-12-01"), Ok(date(2024, 2, 29)));
        assert_eq!(leap("this", "2028-01-10"), Ok(date(2028, 2, 29)));
        assert_eq!(leap("this", "2026-01-10"), Err(DateError::DayNotInYear { month: 2, day: 29, year: 2026 }));
    }

    #[test]
    fn shape_errors_name_what_is_wrong() {
        let cases = [
            (json!("2026-12-01"), "must be a JSON object"),
            (json!({}), "needs one of"),
            (json!({"tomorrow": true}), "unknown field `tomorrow`"),
            (json!({"date": "2026-12-01", "offset_days": 1}), "both `date` and `offset_days`"),
            (json!({"weekday": "tue"}), "`weekday` needs `which`"),
            (json!({"month": 12, "which": "next"}), "`month` needs `day`"),
            (json!({"month": 12, "day": 25}), "`month` needs `which`"),
            (json!({"offset_days": 1, "which": "next"}), "`which` does not belong with `offset_days`"),
            (json!({"weekday": "tue", "which": "next", "day": 3}), "`day` does not belong with `weekday`"),
            (json!({"weekday": "Tue", "which": "next"}), "`weekday` must be one of mon, tue"),
            (json!({"weekday": "tuesday", "which": "next"}), "`weekday` must be one of"),
            (json!({"weekday": "tue", "which": "coming"}), "`which` must be one of next, this, last"),
            (json!({"relative": "Today"}), "`relative` must be one of today, tomorrow, yesterday"),
            (json!({"offset_days": 3.0}), "`offset_days` must be an integer, not `3.0`"),
            (json!({"offset_days": "3"}), "`offset_days` must be an integer"),
            (json!({"month": u64::MAX, "day": 1, "which": "next"}), "`month` is far too large"),
            (json!({"month": "12", "day": 25, "which": "next"}), "`month` must be an integer"),
        ];
        for (value, message) in cases {
            let err = DateExpr::from_json(&value).unwrap_err();
            assert_eq!(err.code(), "invalid_date_expr", "{value}");
            assert!(err.to_string().contains(message), "{value}: {err}");
        }
    }

    #[test]
    fn a_repeated_field_is_refused_when_read_through_serde() {
        let err = serde_json::from_str::<DateExpr>(r#"{"offset_days":1,"offset_days":2}"#).unwrap_err();
        assert!(err.to_string().contains("field `offset_days` appears twice"), "{err}");
        let err = serde_json::from_str::<DateExpr>(r#"{"offset_days":1,"x":2}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `x`"), "{err}");
        let err = serde_json::from_str::<DateExpr>(r#"[1]"#).unwrap_err();
        assert!(err.to_string().contains("a date expression as a JSON object"), "{err}");
    }

    #[test]
    fn offsets_beyond_their_bound_are_refused() {
        for value in [json!({"offset_days": 3661}), json!({"offset_days": -3661}), json!({"offset_days": u64::MAX})] {
            assert_eq!(code(value), "offset_out_of_range");
        }
        assert_eq!(code(json!({"offset_weeks": 523})), "offset_out_of_range");
        assert_eq!(expr(json!({"offset_weeks": -522})), DateExpr::OffsetWeeks(-522));
        let clock = noon("2026-12-01", "en-US");
        let err = evaluate(&DateExpr::OffsetDays(i32::MIN), &clock).unwrap_err();
        assert_eq!(err.code(), "offset_out_of_range");
        assert_eq!(err.to_string(), "`offset_days` is `-2147483648`, beyond the bound of ±3660");
        assert_eq!(evaluate(&DateExpr::OffsetWeeks(600), &clock).unwrap_err().code(), "offset_out_of_range");
    }

    #[test]
    fn days_past_the_calendar_ends_are_out_of_range() {
        let end = TurnClock::new("9999-12-30T12:00:00Z", "UTC", "en-US").unwrap();
        assert_eq!(evaluate(&DateExpr::OffsetDays(3), &end), Err(DateError::DateOutOfRange));
        let next_year_end = DateExpr::MonthDay { month: 12, day: 30, which: Which::Next };
        assert_eq!(evaluate(&next_year_end, &end), Err(DateError::DateOutOfRange));
        let next_week = DateExpr::Weekday { weekday: Weekday::Monday, which: Which::Next };
        assert_eq!(evaluate(&next_week, &end), Err(DateError::DateOutOfRange));
        let start = TurnClock::new("-9999-01-02T12:00:00Z", "UTC", "en-US");
        // RFC 3339 has four-digit years only; the earliest instant it can write is year 0.
        assert_eq!(start.unwrap_err().code(), "invalid_instant");
        let start = TurnClock { at: Timestamp::MIN, time_zone: TimeZone::UTC, locale: Locale::EnGb };
        assert_eq!(start.today(), date(-9999, 1, 2));
        assert_eq!(evaluate(&DateExpr::OffsetDays(-2), &start).unwrap_err().code(), "date_out_of_range");
        let last = DateExpr::MonthDay { month: 1, day: 2, which: Which::Last };
        assert_eq!(evaluate(&last, &start).unwrap_err().code(), "date_out_of_range");
    }

    #[test]
    fn an_offset_outside_rfc_3339_is_not_an_instant() {
        for at in [
            "2026-11-30T03:00:00+25:00",
            "2026-11-30T03:00:00+24:00",
            "2026-11-30T03:00:00-23:60",
            "2026-11-30T03:00:00+30:00",
        ] {
            assert_eq!(parse_instant(at).unwrap_err().code(), "invalid_instant", "{at}");
        }
        for at in ["2026-11-30T03:00:00+23:59", "2026-11-30T03:00:00-23:59", "2026-11-30T03:00:00+00:00"] {
            assert!(parse_instant(at).is_ok(), "{at}");
        }
    }

    #[test]
    fn any_instant_jiff_can_represent_is_read() {
        let last = Timestamp::MAX.to_string();
        for at in ["0000-01-01T00:00:00Z", "0001-01-01T00:00:00+23:59", "9999-12-30T21:59:59Z", last.as_str()] {
            let read = parse_instant(at).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert!((Timestamp::MIN..=Timestamp::MAX).contains(&read), "{at}");
        }
        // Beyond jiff's range is out of range, not a panic.
        assert_eq!(parse_instant("9999-12-31T23:59:59Z").unwrap_err().code(), "invalid_instant");
    }

    #[test]
    fn the_clock_checks_each_field_and_names_it() {
        let bad_at = [
            "2026-11-30",
            "2026-11-30T03:00:00",
            "2026-11-30T03:00Z",
            "2026-11-30 03:00:00Z",
            "2026-11-30T03:00:00Z[America/New_York]",
            "2026-11-30T03:00:00.Z",
            "2026-11-30T03:00:00+0900",
            "2026-13-30T03:00:00Z",
            "2026-02-30T03:00:00Z",
            "2026-11-30T25:00:00Z",
            "2026-11-30T03:00:00.1234567891Z",
            "",
            "now",
        ];
        for at in bad_at {
            let err = TurnClock::new(at, "UTC", "en-US").unwrap_err();
            assert_eq!(err.code(), "invalid_instant", "{at}");
            assert!(err.to_string().starts_with("`at` "), "{err}");
        }
        for at in
            ["2026-11-30T03:00:00Z", "2026-11-30t03:00:00z", "2026-11-30T03:00:00.5+09:00", "2026-11-30T03:00:00-00:00"]
        {
            assert!(TurnClock::new(at, "UTC", "en-US").is_ok(), "{at}");
        }
        for zone in ["america/new_york", "America/NewYork", "EST5EDT ", "", "Etc/Unknown", "Mars/Olympus", "+09:00"] {
            let err = TurnClock::new("2026-11-30T03:00:00Z", zone, "en-US").unwrap_err();
            assert_eq!(err.code(), "unknown_time_zone", "{zone}");
            assert!(err.to_string().starts_with("`time_zone` "), "{err}");
        }
        for zone in ["America/New_York", "Europe/London", "Asia/Seoul", "UTC"] {
            let clock = TurnClock::new("2026-11-30T03:00:00Z", zone, "en-US").unwrap();
            assert_eq!(clock.time_zone.iana_name(), Some(zone));
        }
        for tag in ["en-us", "EN-US", "en_US", "en", "ko", "fr-FR", "en-GB-oxendict", ""] {
            let err = TurnClock::new("2026-11-30T03:00:00Z", "UTC", tag).unwrap_err();
            assert_eq!(err.code(), "unknown_locale", "{tag}");
            assert!(err.to_string().starts_with("`locale` "), "{err}");
        }
        // The first field at fault is the one named.
        assert_eq!(TurnClock::new("x", "y", "z").unwrap_err().code(), "invalid_instant");
        assert_eq!(TurnClock::new("2026-11-30T03:00:00Z", "y", "z").unwrap_err().code(), "unknown_time_zone");
    }

    #[test]
    fn locales_parse_from_their_exact_tags() {
        for locale in Locale::ALL {
            assert_eq!(locale.tag().parse::<Locale>(), Ok(locale));
            assert_eq!(locale.to_string(), locale.tag());
        }
        assert_eq!(Locale::EnUs.week_start(), Weekday::Sunday);
        assert_eq!(Locale::EnGb.week_start(), Weekday::Monday);
        assert_eq!(Locale::KoKr.week_start(), Weekday::Monday);
    }

    #[test]
    fn user_input_in_messages_is_quoted_and_visible() {
        let err = TurnClock::new("2026\u{202E}", "UTC", "en-US").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`at` is not an RFC 3339 date-time with an offset such as `2026-11-30T03:00:00Z`: `2026\\u{202e}`"
        );
        let err = DateExpr::from_json(&json!({"x\u{200B}": 1})).unwrap_err();
        assert_eq!(err.to_string(), "unknown field `x\\u{200b}` in a date expression");
    }

    #[test]
    fn error_codes_are_stable_snake_case() {
        let today = date(2026, 12, 2);
        let all = [
            (DateError::InvalidInstant(String::new()), "invalid_instant"),
            (DateError::UnknownTimeZone(String::new()), "unknown_time_zone"),
            (DateError::UnknownLocale(String::new()), "unknown_locale"),
            (DateError::InvalidExpr(String::new()), "invalid_date_expr"),
            (DateError::InvalidDate(String::new()), "invalid_date"),
            (DateError::InvalidMonthDay { month: 13, day: 1 }, "invalid_date"),
            (
                DateError::OffsetOutOfRange { field: "offset_days", value: String::new(), bound: 1 },
                "offset_out_of_range",
            ),
            (DateError::DateOutOfRange, "date_out_of_range"),
            (DateError::DateInPastForThis { date: today, today }, "date_in_past_for_this"),
            (DateError::DayNotInYear { month: 2, day: 29, year: 2026 }, "day_not_in_year"),
        ];
        for (err, want) in all {
            assert_eq!(err.code(), want);
            assert!(want.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
            let message = err.to_string();
            assert!(!message.ends_with('.'), "{message}");
            assert!(!message.starts_with(|c: char| c.is_ascii_uppercase()), "{message}");
        }
    }

    fn any_which() -> impl Strategy<Value = Which> {
        prop_oneof![Just(Which::Next), Just(Which::This), Just(Which::Last)]
    }

    fn any_expr() -> impl Strategy<Value = DateExpr> {
        prop_oneof![
            (-9999i16..=9999, 1i8..=12, 1i8..=31)
                .prop_filter_map("a real date", |(y, m, d)| Date::new(y, m, d).ok().map(DateExpr::Date)),
            any::<i32>().prop_map(DateExpr::OffsetDays),
            (-4000i32..=4000).prop_map(DateExpr::OffsetDays),
            any::<i32>().prop_map(DateExpr::OffsetWeeks),
            prop_oneof![Just(RelativeDay::Today), Just(RelativeDay::Tomorrow), Just(RelativeDay::Yesterday)]
                .prop_map(DateExpr::Relative),
            (0i8..7, any_which()).prop_map(|(w, which)| DateExpr::Weekday {
                weekday: Weekday::from_monday_zero_offset(w).unwrap(),
                which
            }),
            (any::<i8>(), any::<i8>(), any_which()).prop_map(|(month, day, which)| DateExpr::MonthDay {
                month,
                day,
                which
            }),
            (1i8..=12, 1i8..=31, any_which()).prop_map(|(month, day, which)| DateExpr::MonthDay { month, day, which }),
        ]
    }

    fn any_clock() -> impl Strategy<Value = TurnClock> {
        let zones =
            ["UTC", "America/Los_Angeles", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Seoul", "Europe/London"];
        let seconds = prop_oneof![
            Timestamp::MIN.as_second()..=Timestamp::MAX.as_second(),
            // Near the ends of the calendar, where arithmetic runs out.
            Timestamp::MIN.as_second()..=Timestamp::MIN.as_second() + 86_400 * 800,
            Timestamp::MAX.as_second() - 86_400 * 800..=Timestamp::MAX.as_second(),
        ];
        (seconds, proptest::sample::select(zones.to_vec()), proptest::sample::select(Locale::ALL.to_vec())).prop_map(
            |(s, zone, locale)| TurnClock {
                at: Timestamp::from_second(s).unwrap(),
                time_zone: time_zone_named(zone).unwrap(),
                locale,
            },
        )
    }

    proptest! {
        #[test]
        fn evaluate_never_panics_and_respects_its_definitions(expr in any_expr(), clock in any_clock()) {
            let today = clock.today();
            match (evaluate(&expr, &clock), expr) {
                (Ok(date), DateExpr::Weekday { weekday, which }) => {
                    prop_assert_eq!(date.weekday(), weekday);
                    let days = (date - today).get_days();
                    match which {
                        Which::This => prop_assert!((0..=6).contains(&days)),
                        Which::Next => prop_assert!((1..=13).contains(&days)),
                        Which::Last => prop_assert!((-13..=-1).contains(&days)),
                    }
                }
                (Ok(date), DateExpr::MonthDay { month, day, which }) => {
                    prop_assert_eq!((date.month(), date.day()), (month, day));
                    match which {
                        Which::This => prop_assert!(date >= today && date.year() == today.year()),
                        Which::Next => prop_assert!(date > today),
                        Which::Last => prop_assert!(date < today),
                    }
                }
                (Ok(date), DateExpr::OffsetDays(n)) => prop_assert_eq!((date - today).get_days(), n),
                (Ok(_), _) | (Err(_), _) => {}
            }
        }

        #[test]
        fn the_wire_form_round_trips(expr in any_expr()) {
            let value = serde_json::to_value(expr).unwrap();
            match DateExpr::from_json(&value) {
                Ok(back) => prop_assert_eq!(back, expr),
                // Out-of-bound values built by hand are refused on the way back in, and only
                // those; negative years have no YYYY-MM-DD spelling.
                Err(err) => prop_assert!(
                    matches!(err.code(), "offset_out_of_range" | "invalid_date"),
                    "{} from {}", err, value
                ),
            }
        }
    }
}
