-- The store. Owned by the server process (DuckDB allows one writer per file).
-- Every table and column is documented for analysts in docs/tables.md; keep the two in step.

-- Every well-formed record ever acknowledged, verified or quarantined, as received
-- (canonical compact JSON). Any other table can be rebuilt from this one.
CREATE TABLE IF NOT EXISTS raw_records (
    game_id      UUID PRIMARY KEY,
    game         VARCHAR NOT NULL,          -- 'slow6' | 'slide'
    status       VARCHAR NOT NULL,          -- 'verified' | 'quarantined'
    content_hash UBIGINT NOT NULL,          -- hash of the canonical record: duplicate vs conflict
    record       VARCHAR NOT NULL,          -- the record, canonical JSON
    received_at  TIMESTAMP NOT NULL
);

-- One row per verified Slow6 game. Analysts' saved queries rely on this name and these columns.
CREATE TABLE IF NOT EXISTS games (
    game_id        UUID PRIMARY KEY,
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
    received_at    TIMESTAMP NOT NULL       -- server clock, UTC
);

-- One row per turn of a verified Slow6 game.
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
    trapped   UTINYINT NOT NULL,            -- pieces stopped by a trap this turn
    PRIMARY KEY (game_id, turn)
);

-- One row per power pick of a verified Slow6 game with powers.
CREATE TABLE IF NOT EXISTS game_powers (
    game_id   UUID NOT NULL,
    side      UTINYINT NOT NULL,
    power     VARCHAR NOT NULL,
    used_turn USMALLINT,                    -- turn it was used; NULL = held to the end
    PRIMARY KEY (game_id, side, power)
);

-- One row per piece of a verified Slow6 game (N per side).
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
    home           BOOLEAN NOT NULL,        -- it won the game by R6.1
    PRIMARY KEY (game_id, side, start)
);

-- Well-formed records that failed replay verification: never counted in analysis.
CREATE TABLE IF NOT EXISTS quarantine (
    game_id        UUID PRIMARY KEY,
    game           VARCHAR NOT NULL,
    rule           VARCHAR NOT NULL,        -- first broken rule, 'R2.2' / 'S2.4'
    turn           USMALLINT,               -- 0-based turn / round; NULL = the record as a whole
    seat           UTINYINT,                -- Slide only
    message        VARCHAR NOT NULL,
    platform       VARCHAR NOT NULL,
    client_version VARCHAR NOT NULL,
    mode           VARCHAR NOT NULL,
    ended_at       TIMESTAMP NOT NULL,
    received_at    TIMESTAMP NOT NULL
);
