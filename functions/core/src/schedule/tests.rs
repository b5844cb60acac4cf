//! Unit tests of the schedule engine across DST transitions.

use super::*;
