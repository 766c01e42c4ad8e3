//! Probabilities as integer ratios, so that plans print and compare exactly.

use rand::Rng;
use serde::{Deserialize, Serialize};
use std::{fmt, str::FromStr};

/// A probability `numerator / denominator`, written `"1/100"`.
///
/// A ratio above one is representable (so that a bad config can be reported with its field
/// name) but rejected by validation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Ratio {
    numerator: u32,
    denominator: u32,
}

impl Ratio {
    /// Never.
    pub const ZERO: Ratio = Ratio {
        numerator: 0,
        denominator: 1,
    };

    /// `numerator / denominator`. A zero denominator is kept as-is and fails validation.
    pub const fn new(numerator: u32, denominator: u32) -> Self {
        Self {
            numerator,
            denominator,
        }
    }

    /// The numerator.
    pub const fn numerator(self) -> u32 {
        self.numerator
    }

    /// The denominator.
    pub const fn denominator(self) -> u32 {
        self.denominator
    }

    /// Whether the ratio is a probability: a non-zero denominator and a value of at most one.
    pub const fn is_probability(self) -> bool {
        self.denominator != 0 && self.numerator <= self.denominator
    }

    /// Whether the event can never happen.
    pub const fn is_zero(self) -> bool {
        self.numerator == 0
    }

    /// Draws: true with probability `numerator / denominator`.
    pub fn sample(self, rng: &mut impl Rng) -> bool {
        self.numerator != 0
            && (self.numerator >= self.denominator
                || rng.gen_range(0..self.denominator) < self.numerator)
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

impl fmt::Debug for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A ratio string not of the form `N/D`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RatioParseError {
    input: String,
}

impl fmt::Display for RatioParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid ratio `{}`: expected N/D with unsigned integers (e.g. 1/100)",
            self.input
        )
    }
}

impl std::error::Error for RatioParseError {}

impl FromStr for Ratio {
    type Err = RatioParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || RatioParseError { input: text.into() };
        let (numerator, denominator) = text.trim().split_once('/').ok_or_else(error)?;
        let parse = |part: &str| {
            if part.starts_with('+') {
                return Err(error());
            }
            part.trim().parse::<u32>().map_err(|_| error())
        };
        Ok(Ratio::new(parse(numerator)?, parse(denominator)?))
    }
}

impl From<Ratio> for String {
    fn from(ratio: Ratio) -> Self {
        ratio.to_string()
    }
}

impl TryFrom<String> for Ratio {
    type Error = RatioParseError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_and_prints() {
        let ratio: Ratio = "1/100".parse().unwrap();
        assert_eq!(ratio, Ratio::new(1, 100));
        assert_eq!(ratio.to_string(), "1/100");
        assert!("1".parse::<Ratio>().is_err());
        assert!("a/b".parse::<Ratio>().is_err());
        assert!("-1/2".parse::<Ratio>().is_err());
    }

    #[test]
    fn probability_bounds() {
        assert!(Ratio::new(1, 1).is_probability());
        assert!(!Ratio::new(3, 2).is_probability());
        assert!(!Ratio::new(0, 0).is_probability());
    }

    #[test]
    fn sampling_frequency_is_close_to_the_ratio() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let ratio = Ratio::new(1, 4);
        let hits = (0..40_000).filter(|_| ratio.sample(&mut rng)).count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
        assert!((0..100).all(|_| !Ratio::ZERO.sample(&mut rng)));
        assert!((0..100).all(|_| Ratio::new(5, 5).sample(&mut rng)));
    }
}
