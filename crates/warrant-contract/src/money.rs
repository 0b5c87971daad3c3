//! Money as a typed value (rule 5): an exact decimal amount in an ISO 4217 currency, read from
//! `{"amount":"12.50","currency":"USD"}` and computed with by code, never by a model.
//!
//! An amount is a whole number of the currency's minor units (cents for USD, yen for JPY, fils
//! for KWD): a value finer than that is refused, not rounded, because rounding a price is a
//! decision and code makes none it was not given. Arithmetic is integer arithmetic on minor
//! units, so it is exact or it fails; it never goes through `f64`.

use std::cmp::Ordering;
use std::fmt;

use rust_decimal::Decimal;
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use iso_currency::Currency;

use crate::date::ObjectFields;
use crate::text::visible;

/// An exact amount of one currency, a whole number of its minor units.
///
/// The fields are private so that the invariant holds everywhere: the amount's scale is
/// exactly the currency's number of minor digits, so `12.5 USD` is held, compared and shown
/// as `12.50 USD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    amount: Decimal,
    currency: Currency,
}

/// Why a value is not money, or an operation on money has no exact result. Each variant has a
/// stable code ([`MoneyError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoneyError {
    /// The value is not a money object: not an object, an unknown or repeated field, a
    /// missing one. The message says which.
    #[error("{0}")]
    InvalidMoney(String),
    /// The amount is not a plain decimal: a JSON number where a string is due, an exponent,
    /// a leading `+`, a thousands separator, an empty string.
    #[error("`amount` must be {want}, not `{value}`")]
    InvalidAmount {
        /// The amount as given.
        value: String,
        /// What was expected instead.
        want: &'static str,
    },
    /// The currency is not an ISO 4217 code, written in capitals, that has minor units.
    #[error("`currency` is not an ISO 4217 currency code with minor units, such as `USD`: `{0}`")]
    UnknownCurrency(String),
    /// The amount has digits below the currency's minor unit (`12.505` USD, `12.5` JPY).
    #[error("`{amount}` is finer than the {minor_digits} decimal places {} allows", .currency.code())]
    TooPrecise {
        /// The amount as given.
        amount: String,
        /// Its currency.
        currency: Currency,
        /// The currency's decimal places.
        minor_digits: u32,
    },
    /// An operation combines two currencies.
    #[error("{} and {} are different currencies", .left.code(), .right.code())]
    CurrencyMismatch {
        /// The currency of the left operand.
        left: Currency,
        /// The currency of the right operand.
        right: Currency,
    },
    /// The result has more digits than warrant computes exactly (about 28), or more minor
    /// units than an `i64` holds where one was asked for.
    #[error("the amount is beyond what warrant computes exactly")]
    Overflow,
}

impl MoneyError {
    /// The stable code of the error.
    pub fn code(&self) -> &'static str {
        match self {
            MoneyError::InvalidMoney(_) => "invalid_money",
            MoneyError::InvalidAmount { .. } => "invalid_amount",
            MoneyError::UnknownCurrency(_) => "unknown_currency",
            MoneyError::TooPrecise { .. } => "money_too_precise",
            MoneyError::CurrencyMismatch { .. } => "currency_mismatch",
            MoneyError::Overflow => "money_overflow",
        }
    }
}

/// The currency whose ISO 4217 code is exactly `code`. Currencies without minor units in
/// ISO 4217 (gold `XAU`, the testing code `XTS`, "no currency" `XXX` and the other special
/// units) are refused: they are not amounts of money anyone pays.
pub fn currency_from_code(code: &str) -> Result<Currency, MoneyError> {
    Currency::from_code(code)
        .filter(|c| c.exponent().is_some())
        .ok_or_else(|| MoneyError::UnknownCurrency(visible(code)))
}

/// The currency's number of minor digits, or the error for a currency without minor units.
fn minor_digits(currency: Currency) -> Result<u32, MoneyError> {
    currency.exponent().map(u32::from).ok_or_else(|| MoneyError::UnknownCurrency(currency.code().to_owned()))
}

/// What a wire amount must be.
const WANT_STRING: &str = "a string holding a plain decimal such as `12.50`";
/// What a record amount must be.
const WANT_NUMBER: &str = "a JSON number in a record";

/// The pieces of a decimal numeral, borrowed from its text.
struct Numeral<'t> {
    negative: bool,
    int: &'t str,
    frac: &'t str,
    exponent: i64,
}

/// Reads the JSON number grammar, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, the
/// exponent only where `exponent` allows it. Anything else (`+1`, `1,000`, `.5`, `5.`, `01`,
/// ` 1`, `NaN`) is not a numeral.
fn numeral(text: &str, exponent: bool) -> Option<Numeral<'_>> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let n = digits(rest);
    let (int, rest) = rest.split_at_checked(n)?;
    if int.is_empty() || (int.len() > 1 && int.starts_with('0')) {
        return None;
    }
    let (frac, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let (frac, rest) = after.split_at_checked(digits(after))?;
            if frac.is_empty() {
                // A point with no digit after it.
                return None;
            }
            (frac, rest)
        }
        None => ("", rest),
    };
    let exponent = match rest.strip_prefix(['e', 'E']) {
        None if rest.is_empty() => 0,
        Some(exp) if exponent => {
            let (negative_exp, body) = match exp.strip_prefix('-') {
                Some(body) => (true, body),
                None => (false, exp.strip_prefix('+').unwrap_or(exp)),
            };
            if body.is_empty() || digits(body) != body.len() {
                return None;
            }
            // An exponent too long for an i64 saturates: it is far past any amount either way,
            // and the checks below refuse it as overflow or as too precise.
            let magnitude = body.parse::<i64>().unwrap_or(i64::MAX);
            if negative_exp { -magnitude } else { magnitude }
        }
        _ => return None,
    };
    Some(Numeral { negative, int, frac, exponent })
}

/// The exact amount `numeral` writes, in `currency`; `shown` is the amount as given, for
/// messages.
fn exact(numeral: &Numeral<'_>, currency: Currency, shown: &str) -> Result<Money, MoneyError> {
    let minor = minor_digits(currency)?;
    // The value is D × 10^-scale, D the digits of int and frac together.
    let digits = numeral.int.bytes().chain(numeral.frac.bytes());
    let frac_len = i64::try_from(numeral.frac.len()).unwrap_or(i64::MAX);
    let mut scale = frac_len.saturating_sub(numeral.exponent);
    // Trailing zeros carry no value: 12.500 USD is 12.50 USD.
    let total = numeral.int.len() + numeral.frac.len();
    let trailing = digits.clone().rev().take_while(|&d| d == b'0').count();
    scale = scale.saturating_sub(i64::try_from(trailing).unwrap_or(i64::MAX));
    let significant = digits.take(total - trailing).skip_while(|&d| d == b'0');
    let mut units: i128 = 0;
    let mut any = false;
    for d in significant {
        any = true;
        units = units.checked_mul(10).and_then(|u| u.checked_add(i128::from(d - b'0'))).ok_or(MoneyError::Overflow)?;
    }
    if !any {
        // Zero, however it is written; never a negative zero.
        return Money::from_units(0, currency);
    }
    if scale > i64::from(minor) {
        return Err(MoneyError::TooPrecise { amount: visible(shown), currency, minor_digits: minor });
    }
    let widen = i64::from(minor).checked_sub(scale).and_then(|w| u32::try_from(w).ok()).ok_or(MoneyError::Overflow)?;
    units = 10i128.checked_pow(widen).and_then(|p| units.checked_mul(p)).ok_or(MoneyError::Overflow)?;
    Money::from_units(if numeral.negative { -units } else { units }, currency)
}

impl Money {
    /// Reads the wire form's two strings: `amount` a plain decimal (`12.50`, `-3`, `0.5`;
    /// no exponent, no `+`, no separators, no leading zeros), `currency` an ISO 4217 code in
    /// capitals. The amount may be written with fewer decimal places than the currency has,
    /// or with trailing zeros beyond them, but never with a non-zero digit below the minor
    /// unit.
    pub fn parse(amount: &str, currency: &str) -> Result<Money, MoneyError> {
        let numeral = numeral(amount, false)
            .ok_or_else(|| MoneyError::InvalidAmount { value: visible(amount), want: WANT_STRING })?;
        let currency = currency_from_code(currency)?;
        exact(&numeral, currency, amount)
    }

    /// Reads `{"amount":"12.50","currency":"USD"}`, all or nothing: both fields, no other.
    pub fn from_json(value: &Value) -> Result<Money, MoneyError> {
        let Value::Object(map) = value else {
            return Err(MoneyError::InvalidMoney(format!(
                "money must be a JSON object with `amount` and `currency`, not `{}`",
                visible(&value.to_string())
            )));
        };
        Money::from_fields(map.iter().map(|(k, v)| (k.as_str(), v)))
    }

    fn from_fields<'v>(fields: impl Iterator<Item = (&'v str, &'v Value)>) -> Result<Money, MoneyError> {
        let (mut amount, mut currency) = (None, None);
        for (key, value) in fields {
            let slot = match key {
                "amount" => &mut amount,
                "currency" => &mut currency,
                _ => {
                    return Err(MoneyError::InvalidMoney(format!("unknown field `{}` in money", visible(key))));
                }
            };
            if slot.replace(value).is_some() {
                return Err(MoneyError::InvalidMoney(format!("field `{key}` appears twice in money")));
            }
        }
        let amount = amount.ok_or_else(|| MoneyError::InvalidMoney("money needs `amount`".to_owned()))?;
        let currency = currency.ok_or_else(|| MoneyError::InvalidMoney("money needs `currency`".to_owned()))?;
        // A JSON number has already been through a binary float in many JSON readers; the
        // wire form keeps the amount's digits as text so no reader can change them.
        let Value::String(amount) = amount else {
            return Err(MoneyError::InvalidAmount { value: visible(&amount.to_string()), want: WANT_STRING });
        };
        let Value::String(currency) = currency else {
            return Err(MoneyError::UnknownCurrency(visible(&currency.to_string())));
        };
        Money::parse(amount, currency)
    }

    /// `amount` in `currency`, if it is a whole number of minor units.
    pub fn new(amount: Decimal, currency: Currency) -> Result<Money, MoneyError> {
        let minor = minor_digits(currency)?;
        let normalized = amount.normalize();
        if normalized.scale() > minor {
            return Err(MoneyError::TooPrecise { amount: amount.to_string(), currency, minor_digits: minor });
        }
        let widen = minor - normalized.scale();
        let units =
            10i128.checked_pow(widen).and_then(|p| normalized.mantissa().checked_mul(p)).ok_or(MoneyError::Overflow)?;
        Money::from_units(units, currency)
    }

    /// `units` minor units of `currency`: `from_minor_units(1250, USD)` is `12.50 USD`.
    pub fn from_minor_units(units: i64, currency: Currency) -> Result<Money, MoneyError> {
        Money::from_units(i128::from(units), currency)
    }

    fn from_units(units: i128, currency: Currency) -> Result<Money, MoneyError> {
        let minor = minor_digits(currency)?;
        let amount = Decimal::try_from_i128_with_scale(units, minor).map_err(|_| MoneyError::Overflow)?;
        Ok(Money { amount, currency })
    }

    /// The amount, with exactly the currency's number of decimal places.
    pub fn amount(&self) -> Decimal {
        self.amount
    }

    /// The currency.
    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The amount in minor units (`12.50 USD` is 1250), if it fits an `i64`.
    pub fn to_minor_units(&self) -> Result<i64, MoneyError> {
        i64::try_from(self.amount.mantissa()).map_err(|_| MoneyError::Overflow)
    }

    /// The two amounts' minor units, if they are of one currency.
    fn same_currency(&self, other: &Money) -> Result<(i128, i128), MoneyError> {
        if self.currency != other.currency {
            return Err(MoneyError::CurrencyMismatch { left: self.currency, right: other.currency });
        }
        // Both amounts have the currency's scale, so their mantissas are minor units.
        Ok((self.amount.mantissa(), other.amount.mantissa()))
    }

    /// `self + other`, exactly.
    pub fn checked_add(self, other: Money) -> Result<Money, MoneyError> {
        let (a, b) = self.same_currency(&other)?;
        Money::from_units(a.checked_add(b).ok_or(MoneyError::Overflow)?, self.currency)
    }

    /// `self - other`, exactly; the result may be negative.
    pub fn checked_sub(self, other: Money) -> Result<Money, MoneyError> {
        let (a, b) = self.same_currency(&other)?;
        Money::from_units(a.checked_sub(b).ok_or(MoneyError::Overflow)?, self.currency)
    }

    /// How `self` compares with `other`, which must be of the same currency.
    pub fn checked_cmp(&self, other: &Money) -> Result<Ordering, MoneyError> {
        let (a, b) = self.same_currency(other)?;
        Ok(a.cmp(&b))
    }
}

/// Amounts of one currency are ordered; amounts of two currencies are not comparable at all
/// (`partial_cmp` is `None`, so `<` and `>` are both false). Use [`Money::checked_cmp`] where
/// a mismatch must be an error.
impl PartialOrd for Money {
    fn partial_cmp(&self, other: &Money) -> Option<Ordering> {
        self.checked_cmp(other).ok()
    }
}

/// `12.50 USD`: the amount with exactly the currency's decimal places, a space, the code.
impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount, self.currency.code())
    }
}

/// Reads the [`Display`](fmt::Display) form back: an amount as [`Money::parse`] takes it, one
/// space, a currency code.
impl std::str::FromStr for Money {
    type Err = MoneyError;

    fn from_str(text: &str) -> Result<Money, MoneyError> {
        let (amount, currency) = text
            .split_once(' ')
            .ok_or_else(|| MoneyError::InvalidMoney(format!("`{}` is not written as `12.50 USD`", visible(text))))?;
        Money::parse(amount, currency)
    }
}

impl Serialize for Money {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("amount", &self.amount.to_string())?;
        map.serialize_entry("currency", self.currency.code())?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Money, D::Error> {
        let fields = deserializer.deserialize_map(ObjectFields { what: "money" })?;
        Money::from_fields(fields.iter().map(|(k, v)| (k.as_str(), v))).map_err(de::Error::custom)
    }
}

/// Reads a price from an authoritative record, where data files hold amounts as JSON numbers
/// (`"price": 54.04`). The number is read through its decimal text (serde_json's `Display`,
/// the shortest text that reads back as the same number), never through `f64` arithmetic, so
/// `54.04` is exactly 5404 cents; a number with digits below the currency's minor unit is
/// refused, not rounded.
///
/// A JSON reader that keeps numbers as `f64` keeps about 15 significant digits; a record
/// amount beyond that was already changed when the file was read, so such records should hold
/// amounts as strings and use [`Money::parse`].
pub fn parse_record_amount(value: &Value, currency: Currency) -> Result<Money, MoneyError> {
    let Value::Number(number) = value else {
        return Err(MoneyError::InvalidAmount { value: visible(&value.to_string()), want: WANT_NUMBER });
    };
    let text = number.to_string();
    let numeral =
        numeral(&text, true).ok_or_else(|| MoneyError::InvalidAmount { value: visible(&text), want: WANT_NUMBER })?;
    exact(&numeral, currency, &text)
}

/// The minor units of a record's amount (`54.04` in USD is 5404), read as
/// [`parse_record_amount`] reads it. Records and effects compute in minor units; this is the
/// one way a stored number becomes them.
pub fn record_units(value: &Value, currency: Currency) -> Result<i64, MoneyError> {
    parse_record_amount(value, currency)?.to_minor_units()
}

/// `units` minor units of `currency` as the JSON number a record holds (5404 in USD is
/// `54.04`), written from its exact decimal text. A number that would not read back as the
/// same units (an amount past the roughly 15 significant digits a JSON reader keeps in an
/// `f64`) is refused as overflow rather than stored changed.
pub fn record_number(units: i64, currency: Currency) -> Result<Value, MoneyError> {
    let money = Money::from_minor_units(units, currency)?;
    let value: Value = serde_json::from_str(&money.amount.to_string()).map_err(|_| MoneyError::Overflow)?;
    if record_units(&value, currency) == Ok(units) { Ok(value) } else { Err(MoneyError::Overflow) }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn money(amount: &str, currency: &str) -> Money {
        Money::parse(amount, currency).unwrap()
    }

    fn code(result: Result<Money, MoneyError>) -> &'static str {
        result.unwrap_err().code()
    }

    #[test]
    fn the_wire_form_reads_and_writes_back() {
        let m = Money::from_json(&json!({"amount": "12.50", "currency": "USD"})).unwrap();
        assert_eq!(m.amount(), Decimal::new(1250, 2));
        assert_eq!(m.currency(), Currency::USD);
        assert_eq!(serde_json::to_value(m).unwrap(), json!({"amount": "12.50", "currency": "USD"}));
        let through_serde: Money = serde_json::from_str(r#"{"currency":"USD","amount":"12.50"}"#).unwrap();
        assert_eq!(through_serde, m);
    }

    #[test]
    fn amounts_take_the_currency_s_minor_digits() {
        assert_eq!(money("12.5", "USD").to_string(), "12.50 USD");
        assert_eq!(money("12.5", "USD"), money("12.50", "USD"));
        assert_eq!(money("12", "USD").to_string(), "12.00 USD");
        assert_eq!(money("12.500", "USD").to_string(), "12.50 USD");
        assert_eq!(money("1200", "JPY").to_string(), "1200 JPY");
        assert_eq!(money("12.0", "JPY").to_string(), "12 JPY");
        assert_eq!(money("1.234", "KWD").to_string(), "1.234 KWD");
        assert_eq!(money("1.5", "CLF").to_string(), "1.5000 CLF");
        assert_eq!(money("0", "USD").to_string(), "0.00 USD");
        assert_eq!(money("-0.00", "USD").to_string(), "0.00 USD");
        assert_eq!(money("-3.05", "EUR").to_string(), "-3.05 EUR");
        assert_eq!(money("0.07", "USD").to_minor_units(), Ok(7));
    }

    #[test]
    fn digits_below_the_minor_unit_are_refused() {
        let err = Money::parse("12.505", "USD").unwrap_err();
        assert_eq!(err, MoneyError::TooPrecise { amount: "12.505".into(), currency: Currency::USD, minor_digits: 2 });
        assert_eq!(err.code(), "money_too_precise");
        assert_eq!(err.to_string(), "`12.505` is finer than the 2 decimal places USD allows");
        assert_eq!(code(Money::parse("12.5", "JPY")), "money_too_precise");
        assert_eq!(code(Money::parse("0.0001", "KWD")), "money_too_precise");
        assert_eq!(code(Money::parse("0.00000000000000000000000000000001", "USD")), "money_too_precise");
        assert_eq!(code(Money::new(Decimal::new(12505, 3), Currency::USD)), "money_too_precise");
        assert_eq!(Money::new(Decimal::new(12500, 3), Currency::USD), Ok(money("12.50", "USD")));
    }

    #[test]
    fn only_plain_decimal_strings_are_amounts() {
        for text in [
            "", " ", "+12.50", "12.50 ", " 12.50", "1,000.00", "1 000", "1e3", "1E3", "1.2e1", ".5", "5.", "-", "--1",
            "01", "00.5", "0x10", "NaN", "inf", "12.50USD", "١٢", "１２",
        ] {
            let err = Money::parse(text, "USD").unwrap_err();
            assert_eq!(err.code(), "invalid_amount", "{text:?}");
        }
        for value in [json!(12.5), json!(12), json!(null), json!(["12.50"]), json!({"v": "1"})] {
            let err = Money::from_json(&json!({"amount": value, "currency": "USD"})).unwrap_err();
            assert_eq!(err.code(), "invalid_amount", "{value}");
        }
        let err = Money::from_json(&json!({"amount": 12.5, "currency": "USD"})).unwrap_err();
        assert_eq!(err.to_string(), "`amount` must be a string holding a plain decimal such as `12.50`, not `12.5`");
    }

    #[test]
    fn currencies_are_iso_4217_codes_as_written() {
        for text in ["usd", "Usd", "US", "USDD", "", "XYZ", "$", " USD", "XAU", "XXX", "XTS", "XDR"] {
            let err = Money::parse("1", text).unwrap_err();
            assert_eq!(err.code(), "unknown_currency", "{text:?}");
        }
        let err = Money::from_json(&json!({"amount": "1", "currency": 840})).unwrap_err();
        assert_eq!(err.code(), "unknown_currency");
        assert_eq!(
            err.to_string(),
            "`currency` is not an ISO 4217 currency code with minor units, such as `USD`: `840`"
        );
        for text in ["USD", "EUR", "KRW", "GBP", "JPY", "KWD", "CLF"] {
            assert_eq!(currency_from_code(text).unwrap().code(), text);
        }
        assert_eq!(code(Money::from_minor_units(1, Currency::XAU)), "unknown_currency");
        assert_eq!(code(parse_record_amount(&json!(1), Currency::XXX)), "unknown_currency");
    }

    #[test]
    fn the_money_object_is_read_all_or_nothing() {
        let cases = [
            (json!("12.50 USD"), "money must be a JSON object"),
            (json!({"amount": "1"}), "money needs `currency`"),
            (json!({"currency": "USD"}), "money needs `amount`"),
            (json!({"amount": "1", "currency": "USD", "note": "x"}), "unknown field `note` in money"),
        ];
        for (value, message) in cases {
            let err = Money::from_json(&value).unwrap_err();
            assert_eq!(err.code(), "invalid_money", "{value}");
            assert!(err.to_string().contains(message), "{value}: {err}");
        }
        let err = serde_json::from_str::<Money>(r#"{"amount":"1","amount":"2","currency":"USD"}"#).unwrap_err();
        assert!(err.to_string().contains("field `amount` appears twice in money"), "{err}");
    }

    #[test]
    fn arithmetic_is_exact_within_one_currency() {
        let a = money("12.50", "USD");
        let b = money("0.75", "USD");
        assert_eq!(a.checked_add(b), Ok(money("13.25", "USD")));
        assert_eq!(b.checked_sub(a), Ok(money("-11.75", "USD")));
        assert_eq!(money("0.10", "USD").checked_add(money("0.20", "USD")), Ok(money("0.30", "USD")));
        assert_eq!(a.checked_sub(a).unwrap().to_string(), "0.00 USD");
        let yen = money("500", "JPY");
        let err = a.checked_add(yen).unwrap_err();
        assert_eq!(err, MoneyError::CurrencyMismatch { left: Currency::USD, right: Currency::JPY });
        assert_eq!(err.code(), "currency_mismatch");
        assert_eq!(err.to_string(), "USD and JPY are different currencies");
        assert_eq!(code(a.checked_sub(yen)), "currency_mismatch");
    }

    #[test]
    fn arithmetic_past_the_exact_range_overflows_instead_of_rounding() {
        // 2^96 - 1 minor units is the largest amount held exactly.
        let max = Money::new(Decimal::from_i128_with_scale((1i128 << 96) - 1, 2), Currency::USD).unwrap();
        let cent = money("0.01", "USD");
        assert_eq!(code(max.checked_add(cent)), "money_overflow");
        assert_eq!(max.checked_sub(cent).unwrap().checked_add(cent), Ok(max));
        let min = money("0", "USD").checked_sub(max).unwrap();
        assert_eq!(code(min.checked_sub(cent)), "money_overflow");
        assert_eq!(code(Money::parse("792281625142643375935439503.36", "USD")), "money_overflow");
        assert_eq!(code(Money::parse("99999999999999999999999999999999999999999", "JPY")), "money_overflow");
        assert_eq!(code(Money::new(Decimal::MAX, Currency::USD)), "money_overflow");
    }

    #[test]
    fn minor_units_convert_both_ways() {
        assert_eq!(Money::from_minor_units(1250, Currency::USD), Ok(money("12.50", "USD")));
        assert_eq!(Money::from_minor_units(-5, Currency::KWD).unwrap().to_string(), "-0.005 KWD");
        assert_eq!(Money::from_minor_units(1200, Currency::JPY).unwrap().to_string(), "1200 JPY");
        for units in [0, 1, -1, i64::MAX, i64::MIN] {
            assert_eq!(Money::from_minor_units(units, Currency::EUR).unwrap().to_minor_units(), Ok(units));
        }
        let big = Money::from_minor_units(i64::MAX, Currency::USD).unwrap();
        assert_eq!(
            code(big.checked_add(money("0.01", "USD")).unwrap().to_minor_units().map(|_| big)),
            "money_overflow"
        );
    }

    #[test]
    fn amounts_compare_within_one_currency_only() {
        let (small, large) = (money("9.99", "USD"), money("10", "USD"));
        assert!(small < large);
        assert_eq!(large.checked_cmp(&small), Ok(Ordering::Greater));
        assert_eq!(money("10.0", "USD").checked_cmp(&large), Ok(Ordering::Equal));
        let yen = money("1", "JPY");
        assert_eq!(small.partial_cmp(&yen), None);
        assert_eq!([small < yen, small > yen, small == yen], [false; 3]);
        assert_eq!(small.checked_cmp(&yen).unwrap_err().code(), "currency_mismatch");
    }

    #[test]
    fn the_display_form_reads_back() {
        assert_eq!("12.50 USD".parse::<Money>(), Ok(money("12.50", "USD")));
        assert_eq!("-0.005 KWD".parse::<Money>().unwrap().to_minor_units(), Ok(-5));
        assert_eq!("12.50USD".parse::<Money>().unwrap_err().code(), "invalid_money");
        assert_eq!("12.50  USD".parse::<Money>().unwrap_err().code(), "unknown_currency");
    }

    #[test]
    fn record_prices_read_through_their_decimal_text() {
        // 54.04 has no exact binary form; its shortest text does, and that is what counts.
        let price: Value = serde_json::from_str("54.04").unwrap();
        let m = parse_record_amount(&price, Currency::USD).unwrap();
        assert_eq!(m.to_minor_units(), Ok(5404));
        assert_eq!(m.to_string(), "54.04 USD");
        for (text, cents) in [
            ("0.1", 10),
            ("0.3", 30),
            ("100", 10000),
            ("54.0", 5400),
            ("-2.5", -250),
            ("1e2", 10000),
            ("1.5E1", 1500),
            ("0", 0),
            ("-0.0", 0),
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_record_amount(&value, Currency::USD).unwrap().to_minor_units(), Ok(cents), "{text}");
        }
        // More digits than the currency has are refused, not rounded.
        for text in ["54.045", "0.001", "1e-3", "3.14159"] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(code(parse_record_amount(&value, Currency::USD)), "money_too_precise", "{text}");
        }
        assert_eq!(code(parse_record_amount(&json!(1.5), Currency::JPY)), "money_too_precise");
        assert_eq!(parse_record_amount(&json!(1500), Currency::JPY).unwrap().to_string(), "1500 JPY");
        assert_eq!(code(parse_record_amount(&json!(1e300), Currency::USD)), "money_overflow");
        for value in [json!("54.04"), json!(null), json!(true), json!([54.04])] {
            let err = parse_record_amount(&value, Currency::USD).unwrap_err();
            assert_eq!(err.code(), "invalid_amount", "{value}");
        }
        assert_eq!(
            parse_record_amount(&json!("54.04"), Currency::USD).unwrap_err().to_string(),
            "`amount` must be a JSON number in a record, not `\"54.04\"`"
        );
    }

    #[test]
    fn a_record_amount_finer_than_its_currency_is_refused_not_rounded() {
        // 47.845 USD is no number of cents; reading it as 4784 or 4785 would be a decision.
        let value: Value = serde_json::from_str("47.845").unwrap();
        let err = record_units(&value, Currency::USD).unwrap_err();
        assert_eq!(err, MoneyError::TooPrecise { amount: "47.845".into(), currency: Currency::USD, minor_digits: 2 });
        assert_eq!(record_units(&json!(47.84), Currency::USD), Ok(4784));
        assert_eq!(code(parse_record_amount(&json!(0.5), Currency::JPY)), "money_too_precise");
        assert_eq!(record_units(&json!(1.234), Currency::KWD), Ok(1234));
    }

    #[test]
    fn record_numbers_are_written_from_their_exact_decimal_text() {
        assert_eq!(record_number(5404, Currency::USD).unwrap().to_string(), "54.04");
        assert_eq!(record_number(-5, Currency::USD).unwrap().to_string(), "-0.05");
        assert_eq!(record_number(0, Currency::USD).unwrap(), json!(0.0));
        assert_eq!(record_number(1200, Currency::JPY).unwrap(), json!(1200));
        assert_eq!(record_number(-5, Currency::KWD).unwrap().to_string(), "-0.005");
        // Past what an f64 keeps, the number would not read back as the same cents.
        assert_eq!(record_number(i64::MAX, Currency::USD), Err(MoneyError::Overflow));
    }

    #[test]
    fn exponents_far_out_of_range_do_not_panic() {
        for text in [
            "1e99999999999999999999",
            "1e-99999999999999999999",
            "0e99999999999999999999",
            "5e9223372036854775807",
            "5e-9223372036854775808",
        ] {
            let numeral = numeral(text, true).unwrap();
            let result = exact(&numeral, Currency::USD, text);
            assert!(
                matches!(
                    result.as_ref().map_err(MoneyError::code),
                    Ok(_) | Err("money_overflow" | "money_too_precise")
                ),
                "{text}: {result:?}"
            );
        }
        assert_eq!(exact(&numeral("0e99999999999999999999", true).unwrap(), Currency::USD, "0"), Ok(money("0", "USD")));
    }

    #[test]
    fn error_codes_are_stable_snake_case() {
        let all = [
            (MoneyError::InvalidMoney(String::new()), "invalid_money"),
            (MoneyError::InvalidAmount { value: String::new(), want: WANT_STRING }, "invalid_amount"),
            (MoneyError::UnknownCurrency(String::new()), "unknown_currency"),
            (
                MoneyError::TooPrecise { amount: String::new(), currency: Currency::USD, minor_digits: 2 },
                "money_too_precise",
            ),
            (MoneyError::CurrencyMismatch { left: Currency::USD, right: Currency::EUR }, "currency_mismatch"),
            (MoneyError::Overflow, "money_overflow"),
        ];
        for (err, want) in all {
            assert_eq!(err.code(), want);
            let message = err.to_string();
            assert!(!message.ends_with('.'), "{message}");
        }
        let err = Money::parse("1\u{200B}", "USD").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`amount` must be a string holding a plain decimal such as `12.50`, not `1\\u{200b}`"
        );
    }

    fn currency() -> impl Strategy<Value = Currency> {
        proptest::sample::select(vec![
            Currency::USD,
            Currency::JPY,
            Currency::KWD,
            Currency::CLF,
            Currency::EUR,
            Currency::KRW,
        ])
    }

    /// A valid wire amount for `currency`: a sign, an integer part without leading zeros, and
    /// at most the currency's decimal places, sometimes padded with trailing zeros.
    fn valid_amount() -> impl Strategy<Value = (String, Currency)> {
        (currency(), any::<bool>(), 0u64..=u64::MAX, 0u32..=9_999, 0usize..=3).prop_map(
            |(c, negative, int, frac, pad)| {
                let digits = c.exponent().unwrap() as usize;
                let mut text = String::new();
                if negative {
                    text.push('-');
                }
                text.push_str(&int.to_string());
                if digits > 0 {
                    let frac = format!("{:0width$}", frac % 10u32.pow(digits as u32), width = digits);
                    text.push('.');
                    text.push_str(&frac);
                    text.push_str(&"0".repeat(pad));
                }
                (text, c)
            },
        )
    }

    proptest! {
        #[test]
        fn parse_display_parse_round_trips((text, currency) in valid_amount()) {
            let parsed = Money::parse(&text, currency.code()).unwrap();
            let shown = parsed.to_string();
            prop_assert_eq!(shown.parse::<Money>(), Ok(parsed));
            let (amount, code) = shown.split_once(' ').unwrap();
            prop_assert_eq!(code, currency.code());
            prop_assert_eq!(amount.split_once('.').map_or(0, |(_, f)| f.len()), currency.exponent().unwrap() as usize);
            prop_assert_eq!(Money::parse(amount, code), Ok(parsed));
            let wire = serde_json::to_value(parsed).unwrap();
            prop_assert_eq!(Money::from_json(&wire), Ok(parsed));
            prop_assert_eq!(Money::new(parsed.amount(), currency), Ok(parsed));
        }

        #[test]
        fn a_record_price_in_cents_reads_back_as_those_cents(cents in -999_999_999_999_999i64..=999_999_999_999_999) {
            let price = serde_json::Number::from_f64(cents as f64 / 100.0).unwrap();
            let m = parse_record_amount(&Value::Number(price), Currency::USD).unwrap();
            prop_assert_eq!(m.to_minor_units(), Ok(cents));
        }

        // Fifteen significant digits: every one of them survives the f64 a JSON reader keeps.
        #[test]
        fn record_amounts_round_trip_through_their_json_number(units in -999_999_999_999_999i64..=999_999_999_999_999, c in currency()) {
            let value = record_number(units, c).unwrap();
            prop_assert!(matches!(value, Value::Number(_)));
            prop_assert_eq!(record_units(&value, c), Ok(units));
            // The number's text has no more decimal places than the currency has.
            let text = value.to_string();
            let places = text.split_once('.').map_or(0, |(_, f)| f.len());
            prop_assert!(places <= usize::from(c.exponent().unwrap()), "{}", text);
            // And it reads back through the data file's own JSON reader unchanged.
            let reread: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(record_units(&reread, c), Ok(units));
        }

        #[test]
        fn a_record_amount_with_a_digit_below_the_minor_unit_is_refused(
            units in -999_999_999_999i64..=999_999_999_999,
            extra in 1u8..=9,
            c in currency(),
        ) {
            // The amount's exact text with one more non-zero digit: 47.84 becomes 47.845.
            let shown = Money::from_minor_units(units, c).unwrap().amount().to_string();
            let text = if shown.contains('.') { format!("{shown}{extra}") } else { format!("{shown}.{extra}") };
            let value: Value = serde_json::from_str(&text).unwrap();
            let refused = record_units(&value, c);
            prop_assert!(matches!(refused, Err(MoneyError::TooPrecise { .. })), "{} read as {:?}", text, refused);
        }

        #[test]
        fn no_amount_text_panics(amount in ".{0,40}", exp in "[-+0-9eE.]{0,30}", currency in "[A-Za-z]{0,4}") {
            let _ = Money::parse(&amount, &currency);
            let _ = Money::parse(&exp, "USD");
            if let Some(n) = numeral(&exp, true) {
                let _ = exact(&n, Currency::USD, &exp);
            }
        }

        #[test]
        fn addition_and_subtraction_are_inverse(a in any::<i64>(), b in any::<i64>(), c in currency()) {
            let (x, y) = (Money::from_minor_units(a, c).unwrap(), Money::from_minor_units(b, c).unwrap());
            let sum = x.checked_add(y).unwrap();
            prop_assert_eq!(sum.checked_sub(y), Ok(x));
            prop_assert_eq!(sum.amount().mantissa(), i128::from(a) + i128::from(b));
        }
    }
}
