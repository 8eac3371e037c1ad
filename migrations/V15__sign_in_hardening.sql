-- Issue 13: what each sign-in failure row is.
--   checking       a password attempt whose hash is still running (counted before it runs,
--                  deleted when the password is right); a lock made only of these is brief
--   password       a wrong password
--   second_factor  a wrong TOTP, messaging-app or recovery code; 10 of these per account in
--                  the window lock every verify of that account, whatever the challenge
-- Rows written before this migration were real failures or crashed checks: 'password'.
ALTER TABLE sign_in_failures ADD COLUMN kind TEXT NOT NULL DEFAULT 'password'
    CHECK (kind IN ('checking', 'password', 'second_factor'));
CREATE INDEX sign_in_failures_second_factor ON sign_in_failures (email, at)
    WHERE kind = 'second_factor';

-- When a session's password step passed (for a two-step sign-in, when its challenge was
-- opened). Adding a second factor needs this within 10 minutes or the password again.
-- Sessions from before this migration have none, so they must give the password.
ALTER TABLE sessions ADD COLUMN password_at TEXT;
