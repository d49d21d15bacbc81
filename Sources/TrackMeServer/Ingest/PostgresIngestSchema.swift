#if PostgreSQL
/// PostgreSQL's side of device ingest: a whole group of batches is one round trip
/// between its transaction's BEGIN and COMMIT, and readings are partitioned by time.
///
/// One round trip: as separate statements a batch costs about ten (a savepoint, the device lock, the contact
/// update, the epoch check, the batch claim, the readings, the acknowledgements, the batch row,
/// the release), each a few hundred microseconds of both processes' CPU and a wait. The same
/// steps, in the same order and under the same device lock, run inside the database as one
/// function, `trackme_ingest_batch`; its body is a PL/pgSQL block with an exception handler,
/// which is a savepoint: a batch that fails is rolled back alone and reported, the group's
/// transaction goes on. A round trip per batch plus four of the group's own (the silence
/// check, the reply news, BEGIN, COMMIT) is still too many; `trackme_ingest_group` takes the
/// whole group and its news in one, so a group is three (`simulations/BENCHMARKS.md`: 10,000
/// devices within the 100 ms p99 where a round trip per batch misses at 260 ms). BEGIN and COMMIT stay: a
/// statement's rows reach the driver before its implicit transaction commits, and a batch is
/// acknowledged only once committed.
///
/// Partitions: `readings` is partitioned by range of `placed_ms`, one partition per UTC day
/// (`readings_dYYYYMMDD`), created a week ahead (`PostgresServerStore.ensureReadingPartitions`),
/// plus a default partition for what falls outside them (readings filed before the oldest day
/// partition: a device that was offline for long). Retention drops whole day partitions.
///
/// Exactly once across partitions: the primary key must include the partition key, so it is
/// `(device_id, seq, placed_ms)`, and alone it would let the same `(device_id, seq)` in twice
/// if a resend were filed at another time (an untrusted clock files at the receipt time). The
/// function therefore inserts only readings no partition holds yet (`NOT EXISTS` over
/// `(device_id, seq)`, a probe of each partition's key index), and that check cannot race: it
/// runs under the device's row lock, which every ingest of that device takes first.
///
/// The feed lock and device rows: a transaction that appends to the feed
/// holds the feed's advisory lock to its commit. A group that held it (a device back from
/// silence) and waited for a device row, while another transaction held that row and waited for
/// the feed lock (the silence job's `UPDATE`, a heartbeat of a silent device, an alert being
/// acknowledged), would deadlock; PostgreSQL breaks that after a second by failing one of them.
/// So whoever may wait for the feed lock takes it before any row. The silence job,
/// heartbeats of silent devices and alert intake take it first; a group takes it first when one
/// of its devices is silent, and otherwise only tries it (`pg_try_advisory_xact_lock`): a batch
/// that finds it taken is written again, after the group, in a transaction that takes it first
/// (`PostgresDeadlockTests`).
enum PostgresIngestSchema {
    static let ingestFunction = """
        CREATE OR REPLACE FUNCTION trackme_ingest_batch(
            p_device TEXT, p_batch BIGINT, p_received BIGINT, p_heartbeat TEXT, p_epoch TEXT, p_digest TEXT, p_dropped BIGINT,
            p_seqs BIGINT[], p_kinds TEXT[], p_placed BIGINT[], p_walls BIGINT[], p_flags TEXT[], p_bodies TEXT[], p_returned TEXT,
            p_feed_locked BOOLEAN,
            OUT o_outcome TEXT, OUT o_stored INTEGER, OUT o_duplicates INTEGER, OUT o_alerts TEXT,
            OUT o_seq_floor BIGINT, OUT o_batch_floor BIGINT, OUT o_error TEXT)
        LANGUAGE plpgsql AS $fn$
        DECLARE
            v_silent BOOLEAN;
            v_seq_floor BIGINT;
            v_batch_floor BIGINT;
            v_claimed INTEGER;
            v_epoch TEXT;
            v_digest TEXT;
            v_acks TEXT[];
        BEGIN
            o_stored := 0;
            o_duplicates := 0;
            o_alerts := '[]';
            BEGIN
                -- The device lock: one device's batches one at a time (replays, floors, dedupe).
                SELECT silent INTO v_silent FROM devices WHERE device_id = p_device FOR UPDATE;
                UPDATE devices SET last_seen_ms = GREATEST(COALESCE(last_seen_ms, 0), p_received), silent = FALSE,
                    heartbeat = COALESCE(p_heartbeat, heartbeat) WHERE device_id = p_device;
                IF v_silent THEN
                    -- Never wait for the feed lock while holding device rows (a deadlock with a
                    -- transaction holding it and waiting for one of them): the group took it
                    -- first when it saw a silent device, or it is free now, or this batch goes
                    -- again in a group that takes it first.
                    IF NOT p_feed_locked AND NOT pg_try_advisory_xact_lock(7270001) THEN
                        RAISE EXCEPTION 'feed lock busy' USING ERRCODE = 'TM001';
                    END IF;
                    INSERT INTO feed (kind, data) VALUES ('device_returned', p_returned);
                    PERFORM pg_notify('trackme_feed', '');
                END IF;
                IF p_epoch IS NOT NULL THEN
                    SELECT e.seq_floor, e.batch_floor INTO v_seq_floor, v_batch_floor
                        FROM device_epochs e WHERE e.device_id = p_device AND e.store_epoch = p_epoch;
                    IF NOT FOUND THEN
                        -- The device's first epoch is taken as it is; a later one must number above
                        -- everything held.
                        IF EXISTS (SELECT 1 FROM device_epochs e WHERE e.device_id = p_device) THEN
                            SELECT f.seq_floor, f.batch_floor INTO v_seq_floor, v_batch_floor FROM trackme_floors(p_device) f;
                        ELSE
                            v_seq_floor := 1;
                            v_batch_floor := 1;
                        END IF;
                        INSERT INTO device_epochs (device_id, store_epoch, seq_floor, batch_floor, first_seen_ms)
                            VALUES (p_device, p_epoch, v_seq_floor, v_batch_floor, p_received);
                    END IF;
                    IF p_batch < v_batch_floor OR COALESCE((SELECT min(x) FROM unnest(p_seqs) x), 9223372036854775807) < v_seq_floor THEN
                        o_outcome := 'store_epoch_rebase';
                        SELECT f.seq_floor, f.batch_floor INTO o_seq_floor, o_batch_floor FROM trackme_floors(p_device) f;
                        UPDATE device_epochs SET seq_floor = o_seq_floor, batch_floor = o_batch_floor
                            WHERE device_id = p_device AND store_epoch = p_epoch;
                        RETURN;
                    END IF;
                END IF;
                INSERT INTO batches (device_id, batch_seq, received_ms, store_epoch, digest)
                    VALUES (p_device, p_batch, p_received, p_epoch, p_digest) ON CONFLICT DO NOTHING;
                GET DIAGNOSTICS v_claimed = ROW_COUNT;
                IF v_claimed = 0 THEN
                    SELECT b.stored, b.duplicates, b.acknowledged_alerts, b.store_epoch, b.digest
                        INTO o_stored, o_duplicates, o_alerts, v_epoch, v_digest
                        FROM batches b WHERE b.device_id = p_device AND b.batch_seq = p_batch;
                    -- BatchDigest.conflicts: rows from before digests are taken as they are.
                    IF v_digest IS NOT NULL AND (v_digest IS DISTINCT FROM p_digest OR (v_epoch IS NOT NULL AND v_epoch IS DISTINCT FROM p_epoch)) THEN
                        o_outcome := 'idempotency_key_reused';
                        o_stored := 0;
                        o_duplicates := 0;
                        o_alerts := '[]';
                        SELECT f.seq_floor, f.batch_floor INTO o_seq_floor, o_batch_floor FROM trackme_floors(p_device) f;
                        IF p_epoch IS NOT NULL THEN
                            UPDATE device_epochs SET seq_floor = o_seq_floor, batch_floor = o_batch_floor
                                WHERE device_id = p_device AND store_epoch = p_epoch;
                        END IF;
                        RETURN;
                    END IF;
                    o_outcome := 'replayed';
                    RETURN;
                END IF;
                INSERT INTO readings (device_id, seq, kind, placed_ms, received_ms, wall_ms, time_flag, body)
                    SELECT p_device, r.seq, r.kind, r.placed, p_received, NULLIF(r.wall, -9223372036854775808), NULLIF(r.flag, ''), r.body
                    FROM unnest(p_seqs, p_kinds, p_placed, p_walls, p_flags, p_bodies) AS r(seq, kind, placed, wall, flag, body)
                    WHERE NOT EXISTS (SELECT 1 FROM readings x WHERE x.device_id = p_device AND x.seq = r.seq)
                    ON CONFLICT DO NOTHING;
                GET DIAGNOSTICS o_stored = ROW_COUNT;
                o_duplicates := COALESCE(array_length(p_seqs, 1), 0) - o_stored;
                WITH acked AS (
                    UPDATE alerts SET ack_delivered = TRUE WHERE device_id = p_device AND acknowledged AND NOT ack_delivered
                    RETURNING alert_id)
                SELECT COALESCE(array_agg(alert_id ORDER BY alert_id), '{}') INTO v_acks FROM acked;
                o_alerts := array_to_json(v_acks)::TEXT;
                UPDATE batches SET stored = o_stored, duplicates = o_duplicates, acknowledged_alerts = o_alerts
                    WHERE device_id = p_device AND batch_seq = p_batch;
                IF p_dropped <> 0 THEN
                    UPDATE devices SET dropped_by_budget = dropped_by_budget + p_dropped WHERE device_id = p_device;
                END IF;
                o_outcome := 'stored';
            EXCEPTION WHEN SQLSTATE 'TM001' THEN
                o_outcome := 'feed_lock_busy';
                o_stored := 0;
                o_duplicates := 0;
                o_alerts := '[]';
            WHEN OTHERS THEN
                -- Rolled back to the block's start (a savepoint): this batch alone fails.
                o_outcome := 'error';
                o_error := SQLSTATE || ': ' || SQLERRM;
                o_stored := 0;
                o_duplicates := 0;
                o_alerts := '[]';
            END;
        END
        $fn$
        """

    /// A whole group in one round trip (inside the group's transaction; `IngestGroupCall`): the
    /// feed lock first when asked or when one of the devices is silent, then each batch through
    /// `trackme_ingest_batch` (its own savepoint), in the order given (the caller sorts by device,
    /// so two instances' groups lock device rows in one order), then each stored or replayed
    /// batch's reply news (`DeviceNews`: alerts a dispatcher closed that the device still shows,
    /// its care settings; `o_news_error` when they could not be read). The group's readings come flattened, `p_counts[i]` of them for batch
    /// `i`. Arrays cannot hold NULL through the driver: an empty heartbeat or digest stands for
    /// none (neither is ever empty), and `p_epoch_given` says whether a batch has an epoch (an
    /// empty one is a device's to send). One row per batch, in order.
    static let groupFunction = """
        CREATE OR REPLACE FUNCTION trackme_ingest_group(
            p_feed_first BOOLEAN, p_devices TEXT[], p_batches BIGINT[], p_received BIGINT[], p_heartbeats TEXT[],
            p_epoch_given BOOLEAN[], p_epochs TEXT[], p_digests TEXT[], p_dropped BIGINT[], p_returned TEXT[], p_counts INTEGER[],
            p_seqs BIGINT[], p_kinds TEXT[], p_placed BIGINT[], p_walls BIGINT[], p_flags TEXT[], p_bodies TEXT[])
        RETURNS TABLE (o_outcome TEXT, o_stored INTEGER, o_duplicates INTEGER, o_alerts TEXT, o_seq_floor BIGINT,
            o_batch_floor BIGINT, o_error TEXT, o_resolved TEXT[], o_care_version BIGINT, o_care_settings TEXT, o_news_error TEXT)
        LANGUAGE plpgsql AS $fn$
        DECLARE
            v_feed_locked BOOLEAN := p_feed_first;
            v_from INTEGER := 1;
            v_to INTEGER;
            b RECORD;
        BEGIN
            -- A device back from silence appends to the feed: then the feed lock before any
            -- device row (see above on deadlocks).
            IF NOT v_feed_locked THEN
                v_feed_locked := EXISTS (SELECT 1 FROM devices WHERE device_id = ANY(p_devices) AND silent);
            END IF;
            IF v_feed_locked THEN
                PERFORM pg_advisory_xact_lock(7270001);
            END IF;
            FOR i IN 1 .. COALESCE(array_length(p_devices, 1), 0) LOOP
                v_to := v_from + p_counts[i] - 1;
                SELECT * INTO b FROM trackme_ingest_batch(
                    p_devices[i], p_batches[i], p_received[i], NULLIF(p_heartbeats[i], ''),
                    CASE WHEN p_epoch_given[i] THEN p_epochs[i] END, NULLIF(p_digests[i], ''), p_dropped[i],
                    p_seqs[v_from:v_to], p_kinds[v_from:v_to], p_placed[v_from:v_to], p_walls[v_from:v_to],
                    p_flags[v_from:v_to], p_bodies[v_from:v_to], p_returned[i], v_feed_locked);
                v_from := v_to + 1;
                o_outcome := b.o_outcome;
                o_stored := b.o_stored;
                o_duplicates := b.o_duplicates;
                o_alerts := b.o_alerts;
                o_seq_floor := b.o_seq_floor;
                o_batch_floor := b.o_batch_floor;
                o_error := b.o_error;
                o_resolved := NULL;
                o_care_version := NULL;
                o_care_settings := NULL;
                o_news_error := NULL;
                IF b.o_outcome IN ('stored', 'replayed') THEN
                    -- News that cannot be read must not cost the batch: it goes without, and the
                    -- device gets the news with its next batch (a read-only savepoint).
                    BEGIN
                        o_resolved := COALESCE((SELECT array_agg(a.alert_id ORDER BY a.alert_id) FROM alerts a
                            WHERE a.device_id = p_devices[i] AND a.outcome IS NOT NULL AND a.state NOT IN ('resolved', 'cancelled')),
                            '{}'::TEXT[]);
                        SELECT c.version, c.settings INTO o_care_version, o_care_settings FROM care_settings c
                            WHERE c.device_id = p_devices[i];
                    EXCEPTION WHEN OTHERS THEN
                        o_resolved := NULL;
                        o_care_version := NULL;
                        o_care_settings := NULL;
                        o_news_error := SQLSTATE || ': ' || SQLERRM;
                    END;
                END IF;
                RETURN NEXT;
            END LOOP;
        END
        $fn$
        """

    /// Above every reading and batch number the server holds for the device, and every floor
    /// it handed out before (as in the SQLite store).
    static let floorsFunction = """
        CREATE OR REPLACE FUNCTION trackme_floors(p_device TEXT, OUT seq_floor BIGINT, OUT batch_floor BIGINT)
        LANGUAGE sql STABLE AS $fn$
            SELECT GREATEST(COALESCE((SELECT max(seq) FROM readings WHERE device_id = p_device), 0) + 1,
                            COALESCE((SELECT max(e.seq_floor) FROM device_epochs e WHERE e.device_id = p_device), 1))::BIGINT,
                   GREATEST(COALESCE((SELECT max(batch_seq) FROM batches WHERE device_id = p_device), 0) + 1,
                            COALESCE((SELECT max(e.batch_floor) FROM device_epochs e WHERE e.device_id = p_device), 1))::BIGINT
        $fn$
        """

    /// Moves an existing unpartitioned `readings` table under a partitioned one: the old table
    /// becomes the partition of everything before the next UTC midnight after its newest
    /// reading (or after now; today's midnight when it is empty), so no row is copied; day
    /// partitions start there. The primary key
    /// gains `placed_ms` (a partition key must be in it).
    static let partitionReadings = """
        DO $mig$
        DECLARE
            bound BIGINT;
        BEGIN
            -- Empty: day partitions from today's start. Otherwise from the next midnight after
            -- the newest reading (or now), so the old table's rows all stay where they are.
            SELECT CASE WHEN max(placed_ms) IS NULL
                THEN floor((extract(epoch FROM now()) * 1000) / 86400000.0)::BIGINT * 86400000
                ELSE (floor(GREATEST(max(placed_ms), (extract(epoch FROM now()) * 1000)::BIGINT) / 86400000.0)::BIGINT + 1) * 86400000 END
                INTO bound FROM readings;
            ALTER TABLE readings RENAME TO readings_before_partitioning;
            -- Its key becomes (device_id, seq, placed_ms), built when it is attached below.
            ALTER TABLE readings_before_partitioning DROP CONSTRAINT readings_pkey;
            ALTER INDEX readings_placed RENAME TO readings_before_partitioning_placed;
            CREATE TABLE readings (
                device_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, placed_ms BIGINT NOT NULL,
                received_ms BIGINT NOT NULL, wall_ms BIGINT, time_flag TEXT, body TEXT NOT NULL,
                PRIMARY KEY (device_id, seq, placed_ms)) PARTITION BY RANGE (placed_ms);
            EXECUTE format('ALTER TABLE readings ATTACH PARTITION readings_before_partitioning FOR VALUES FROM (MINVALUE) TO (%s)', bound);
            CREATE TABLE readings_default PARTITION OF readings DEFAULT;
        END
        $mig$
        """
}
#endif
