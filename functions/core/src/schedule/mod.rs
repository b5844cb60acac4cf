//! Schedule maths (filled by the Schedule engine issue).
