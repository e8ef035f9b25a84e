-- The store. Owned by the server process (DuckDB allows one writer per file).
-- Every table and column is documented for analysts in docs/tables.md; keep the two in step.
--
-- No game table has an index or primary key: every one is unique per its natural key by
-- construction (the single writer decides duplicates from its in-memory id index and inserts a
-- game's rows once, in the transaction that stores its raw record). An ART index would cost
-- ~45 bytes a game, ~270 with the free blocks its rewrites at checkpoints leave in the file, and
-- hundreds on the per-turn tables (benchmarks/ingest_size.py); no query needs one.

CREATE TABLE IF NOT EXISTS store_meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
INSERT OR IGNORE INTO store_meta VALUES ('schema_version', '1');

-- Every well-formed record ever acknowledged, verified or quarantined. Any other table can be
-- rebuilt from this one (balance reverify). `record` holds the canonical JSON (sorted keys,
-- compact), deflated with the preset dictionary named by `codec`; SQL reads it as text with
-- raw_json(record, codec) (registered by the server and `balance` tools; ingest/codec.py).
CREATE TABLE IF NOT EXISTS raw_records (
    game_id      UUID NOT NULL,             -- unique: the idempotency key
    game         VARCHAR NOT NULL,          -- 'slow6' | 'slide'
    status       VARCHAR NOT NULL,          -- 'verified' | 'quarantined'
    content_hash UBIGINT NOT NULL,          -- hash of the canonical record: duplicate vs conflict
    record       BLOB NOT NULL,             -- the canonical record, encoded by `codec`
    codec        UTINYINT NOT NULL,         -- 0 plain JSON; 1..4 ingest/codec.py DICTIONARIES
    received_at  TIMESTAMP NOT NULL
);

-- One row per verified Slow6 game. Analysts' saved queries rely on this name and these columns.
CREATE TABLE IF NOT EXISTS games (
    game_id        UUID NOT NULL,           -- unique (one row per verified game)
    game           VARCHAR NOT NULL,        -- always 'slow6' here
    board          UTINYINT NOT NULL,       -- 5 or 7
    powers         BOOLEAN NOT NULL,
    hidden         BOOLEAN NOT NULL,
    variant        VARCHAR NOT NULL,        -- 'classic' | 'powers' | 'hidden'
    mode           VARCHAR NOT NULL,        -- online | friend | computer | challenge | tutorial
    ai_side        UTINYINT,                -- computer mode only
    ai_level       UTINYINT,                -- computer mode only, 1 careful .. 4 hard
    challenge_id   VARCHAR,                 -- challenge mode only
    platform       VARCHAR NOT NULL,
    client_version VARCHAR NOT NULL,
    first          UTINYINT NOT NULL,       -- side that moved first
    lineup_0       VARCHAR NOT NULL,        -- ranks by file, 'a' first: '31524'
    lineup_1       VARCHAR NOT NULL,
    powers_0       VARCHAR[],               -- side 0's three picks (NULL without powers)
    powers_1       VARCHAR[],
    winner         UTINYINT,                -- NULL for a draw
    reason         VARCHAR NOT NULL,        -- home | wipeout | points | timeout | resign
    points_0       USMALLINT NOT NULL,      -- R6.3 totals at the end, as replayed
    points_1       USMALLINT NOT NULL,
    turns          USMALLINT NOT NULL,      -- turns in the log
    ended_at       TIMESTAMP NOT NULL,      -- client clock, UTC
    received_at    TIMESTAMP NOT NULL,      -- server clock, UTC
    -- the ruleset it was judged under (rulesets.md RS5.3); last: added to older stores
    ruleset        VARCHAR NOT NULL DEFAULT 'standard'
);

-- One row per turn of a verified Slow6 game; unique per (game_id, turn).
CREATE TABLE IF NOT EXISTS game_turns (
    game_id   UUID NOT NULL,
    turn      USMALLINT NOT NULL,           -- 0-based index into the log
    side      UTINYINT NOT NULL,
    power     VARCHAR,                      -- power used this turn, if any
    move_1    VARCHAR,                      -- 'c1-c3'; NULL for a pass
    move_2    VARCHAR,                      -- second move of a double
    fights    UTINYINT NOT NULL,            -- fights fought this turn
    removed   UTINYINT NOT NULL,            -- pieces removed this turn (both sides)
    stuns     UTINYINT NOT NULL,            -- crowns stunned this turn
    catches   UTINYINT NOT NULL,            -- stunned crowns caught this turn
    promotions UTINYINT NOT NULL,
    trapped   UTINYINT NOT NULL             -- pieces stopped by a trap this turn
);

-- One row per power pick of a verified Slow6 game with powers; unique per (game_id, side, power).
CREATE TABLE IF NOT EXISTS game_powers (
    game_id   UUID NOT NULL,
    side      UTINYINT NOT NULL,
    power     VARCHAR NOT NULL,
    used_turn USMALLINT                     -- turn it was used; NULL = held to the end
);

-- One row per piece of a verified Slow6 game (N per side); unique per (game_id, side, start).
CREATE TABLE IF NOT EXISTS game_pieces (
    game_id        UUID NOT NULL,
    side           UTINYINT NOT NULL,
    start          VARCHAR NOT NULL,        -- start square, 'c1'
    rank           UTINYINT NOT NULL,       -- original rank 1..N
    promoted_turn  USMALLINT,               -- turn it became a crown, NULL if never
    removed_turn   USMALLINT,               -- turn it was last removed, NULL if on the board at the end
    revealed_turn  USMALLINT,               -- first turn it moved or fought (R7.2), NULL if never
    moves          USMALLINT NOT NULL,      -- moves it made
    stunned        UTINYINT NOT NULL,       -- times stunned (as a crown)
    home           BOOLEAN NOT NULL         -- it won the game by R6.1
);

-- Well-formed records that failed replay verification: never counted in analysis.
CREATE TABLE IF NOT EXISTS quarantine (
    game_id        UUID NOT NULL,           -- unique; the record is in raw_records
    game           VARCHAR NOT NULL,
    rule           VARCHAR NOT NULL,        -- first broken rule, 'R2.2' / 'S2.4'; 'format' (reverify)
    turn           USMALLINT,               -- 0-based turn / round; NULL = the record as a whole
    seat           UTINYINT,                -- Slide only
    message        VARCHAR NOT NULL,
    platform       VARCHAR NOT NULL,
    client_version VARCHAR NOT NULL,
    mode           VARCHAR NOT NULL,
    ended_at       TIMESTAMP NOT NULL,
    received_at    TIMESTAMP NOT NULL,
    ruleset        VARCHAR NOT NULL DEFAULT 'standard'  -- judged under; RS5.1: the one it named
);

-- One row per verified Slide game.
CREATE TABLE IF NOT EXISTS slide_games (
    game_id        UUID NOT NULL,           -- unique (one row per verified game)
    players        UTINYINT NOT NULL,       -- 2..6
    first          UTINYINT NOT NULL,       -- seat leading round 1
    match_id       VARCHAR,                 -- tournament match, NULL for a single game
    match_game     USMALLINT,               -- game number in the match, 1-based
    mode           VARCHAR NOT NULL,
    platform       VARCHAR NOT NULL,
    client_version VARCHAR NOT NULL,
    winners        UTINYINT[] NOT NULL,     -- winning seats, sorted (several = shared victory)
    shared         BOOLEAN NOT NULL,        -- more than one winner
    best_score     USMALLINT NOT NULL,      -- the winning score
    rounds         UTINYINT NOT NULL,       -- rounds in the log (16)
    ended_at       TIMESTAMP NOT NULL,
    received_at    TIMESTAMP NOT NULL,
    ruleset        VARCHAR NOT NULL DEFAULT 'standard'  -- the ruleset it was judged under
);

-- One row per seat of a verified Slide game; unique per (game_id, seat).
CREATE TABLE IF NOT EXISTS slide_seats (
    game_id         UUID NOT NULL,
    players         UTINYINT NOT NULL,      -- copied from slide_games: cut by table size directly
    seat            UTINYINT NOT NULL,
    seat_from_first UTINYINT NOT NULL,      -- (seat - first) mod players: 0 = led round 1
    score           USMALLINT NOT NULL,     -- S3.3, as replayed
    cards_left      UTINYINT NOT NULL,
    won             BOOLEAN NOT NULL,       -- among the winners (shared or not)
    groups_removed  UTINYINT NOT NULL,      -- groups cancelled at the end
    cards_removed   UTINYINT NOT NULL,      -- cards in those groups (16 - cards_left)
    groups          STRUCT("value" UTINYINT, size UTINYINT)[] NOT NULL  -- each removed group
);

-- One row per round per seat of a verified Slide game; unique per (game_id, round, seat).
CREATE TABLE IF NOT EXISTS slide_rounds (
    game_id     UUID NOT NULL,
    round       UTINYINT NOT NULL,          -- 0-based
    seat        UTINYINT NOT NULL,
    take_order  UTINYINT NOT NULL,          -- 0 = took first this round (the round's leader)
    revealed    UTINYINT NOT NULL,          -- value of the card the seat revealed
    reveal_row  UTINYINT NOT NULL,          -- its grid position, the seat's gap
    reveal_col  UTINYINT NOT NULL,
    took        UTINYINT NOT NULL,          -- value the seat took from the middle
    had_choice  BOOLEAN NOT NULL,           -- more than one distinct value was available
    available   UTINYINT[] NOT NULL,        -- values in the middle when it took, sorted
    side        VARCHAR NOT NULL            -- edge the card entered from: left|right|top|bottom
);

-- Registered rulesets (rulesets.md RS4): immutable once registered (RS1.3), never `standard`
-- (built in). Written only by `balance rules add` / POST /v1/admin/rulesets (registry.py).
CREATE TABLE IF NOT EXISTS rulesets (
    game          VARCHAR NOT NULL,         -- 'slow6' | 'slide'
    name          VARCHAR NOT NULL,         -- RS1.1; unique per game
    params        JSON NOT NULL,            -- the full resolved parameter set (RS3, RS4.1)
    description   VARCHAR NOT NULL,         -- '' when not given
    registered_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (game, name)
);

-- The balance lab's runs (docs/lab.md): a paired simulation of a candidate ruleset against a
-- base one, and its predictions. Written only by `balance lab run`; never changed afterwards.
CREATE TABLE IF NOT EXISTS lab_runs (
    id             VARCHAR NOT NULL PRIMARY KEY, -- the run's key: a digest of everything below
                                                 -- that decides its games (same key, same games)
    created_at     TIMESTAMPTZ NOT NULL,
    game           VARCHAR NOT NULL,             -- 'slow6'
    base           JSON NOT NULL,                -- Ruleset.to_json() of the base
    candidate      JSON NOT NULL,                -- Ruleset.to_json() of the candidate
    board          UTINYINT NOT NULL,            -- 5 | 7
    powers         BOOLEAN NOT NULL,
    levels         UTINYINT[] NOT NULL,          -- the bot levels standing in for players
    games          UINTEGER NOT NULL,            -- pairs played (each: one game per ruleset)
    seed           BIGINT NOT NULL,
    engine_version VARCHAR NOT NULL,             -- replays.lab.ENGINE_VERSION
    min_effect     DOUBLE NOT NULL,              -- the smallest change that matters (score)
    picks_differ   UINTEGER NOT NULL,            -- pairs whose sides' picks differ (the
                                                 -- candidate's powers/picks made them)
    seconds        DOUBLE NOT NULL               -- wall time of the simulation
);

-- A lab run's predicted rows: one per (family, row), candidate minus base with a 95% paired
-- bootstrap interval; `confident`: the interval clear of the minimum effect.
CREATE TABLE IF NOT EXISTS lab_rows (
    run_id      VARCHAR NOT NULL,              -- lab_runs.id
    ord         USMALLINT NOT NULL,            -- the row's place in the run's output
    family      VARCHAR NOT NULL,              -- first_move | power_pick | power_used |
                                               -- end_reason | game_length | lineup_cell | level
    row         VARCHAR NOT NULL,              -- a power, an end reason, mean turns, ...
    unit        VARCHAR NOT NULL,              -- score | share | turns
    base        DOUBLE,                        -- NULL: no game of that side has the row
    candidate   DOUBLE,
    change      DOUBLE,
    lo          DOUBLE,
    hi          DOUBLE,
    confident   BOOLEAN NOT NULL,
    n           UINTEGER NOT NULL              -- games or sides in the row's smallest group
                                               -- (the smaller arm's); confident needs 30
);

-- The SQL console's saved queries (/sql/q/<slug>): not game data. Written only by the server,
-- when an analyst saves, changes or deletes one (with the token where the server requires
-- one); `balance reverify` and the analysis jobs never touch it. Unique per `slug`.
CREATE TABLE IF NOT EXISTS saved_queries (
    slug        VARCHAR NOT NULL,           -- unique: the stable URL /sql/q/<slug>
    title       VARCHAR NOT NULL,           -- its name, as the console lists it
    description VARCHAR NOT NULL,           -- what it answers ('' when not given)
    sql         VARCHAR NOT NULL,           -- one read-only query; :name marks a parameter
    params      VARCHAR NOT NULL,           -- JSON list of {"name", "type", "default", "label"}
    chart       VARCHAR,                    -- JSON {"mark", "x", "y", "color", "facet"}; NULL: none
    created_at  TIMESTAMP NOT NULL,         -- server clock, UTC
    updated_at  TIMESTAMP NOT NULL,         -- server clock, UTC, of the last change
    version     UINTEGER NOT NULL           -- 1 when first saved, one more at each change
);

-- Uploaded records the server rejected, counted: nothing of a rejected record is stored (not
-- its text, not the values at fault), only how many, per day, field and kind of problem. Rows
-- are appended (a flush of each server's tally every few seconds; past days rolled up to a
-- row per key once a day); sum `records` to count.
CREATE TABLE IF NOT EXISTS rejections (
    day         DATE NOT NULL,              -- server clock, UTC, when the records arrived
    field       VARCHAR NOT NULL,           -- the field at fault: 'lineups', 'turns[]', 'line'
    problem     VARCHAR NOT NULL,           -- not JSON | unknown field | missing field | invalid value
    records     BIGINT NOT NULL
);
