//! Identity (spec 2.4, 4.1, 5). So far: password hashing, used by `setup`. The identity
//! issue adds registration, sessions and second factors here.

pub mod password;
