//! The integration tests: one binary, a module per area (STYLE 12).

mod api_tokens;
mod at_rest;
mod catalog;
mod cli;
mod conventions;
mod customers;
mod idempotency;
mod identity;
mod inventory;
mod jobs;
mod layers;
mod limits;
mod logging;
mod members;
mod msgapp;
mod openapi;
mod orders;
mod paging;
mod process;
mod rate_limit;
mod reviews;
mod storage;
mod support;
mod tenants;
mod two_factor;
mod webhooks;
