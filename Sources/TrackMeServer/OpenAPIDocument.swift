/// The API as OpenAPI 3.1, served at `/openapi.yaml`. The wire messages are specified in
/// `Sources/TrackMeCore/WIRE.md`; this document refers to it rather than repeating every field.
enum OpenAPIDocument {
    static let yaml = """
        openapi: 3.1.0
        info:
          title: TrackMe server
          version: "1"
          description: |
            Batch ingest, alert intake and acknowledgement, and the dispatcher feed for TrackMe Edge
            agents. Message bodies follow the wire format version 1 (Sources/TrackMeCore/WIRE.md).
            Every 4xx/5xx body is an Error. Bearer tokens: admin (configured), device and dispatcher
            (issued once by the admin endpoints, stored only as SHA-256 hashes).
        servers:
          - url: http://127.0.0.1:8080
        security:
          - bearer: []
        paths:
          /health:
            get:
              summary: "Readiness: ok only when the database answers and a write would succeed now"
              security: []
              responses:
                "200": {description: Serving, content: {application/json: {schema: {type: object, properties: {status: {const: ok}}}}}}
                "503":
                  description: |
                    degraded (the database does not answer within 3 s, is read-only or a standby, or its disk
                    is nearly full: reasons names which) or database_damaged (what to do is in message)
                  content: {application/json: {schema: {type: object, properties: {status: {enum: [degraded, database_damaged]}, reasons: {type: array, items: {type: string}}, free_bytes: {type: integer}, database: {type: string}, message: {type: string}}}}}
          /metrics:
            get:
              summary: Prometheus text-format metrics (trackme_server_*); the admin token unless the peer is on loopback
              security: []
              responses:
                "200": {description: Metrics, content: {text/plain: {schema: {type: string}}}}
          /openapi.yaml:
            get:
              summary: This document
              security: []
              responses:
                "200": {description: OpenAPI 3.1, content: {application/yaml: {schema: {type: string}}}}
          /v1/devices:
            post:
              summary: Enrol a device (admin)
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      type: object
                      required: [device_id, person]
                      properties:
                        device_id: {type: string, pattern: "^[A-Za-z0-9._-]{1,64}$"}
                        person:
                          type: object
                          required: [name, age]
                          properties:
                            name: {type: string, minLength: 1}
                            age: {type: integer, minimum: 0, maximum: 150}
                            resting_hr: {type: [integer, "null"]}
                            min_hr: {type: [integer, "null"]}
                            max_hr: {type: [integer, "null"]}
              responses:
                "201":
                  description: Enrolled; the token is shown only this once
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [device_id, token]
                        properties: {device_id: {type: string}, token: {type: string}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "409": {description: Device id already enrolled, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "413": {$ref: "#/components/responses/TooLarge"}
          /v1/dispatchers:
            post:
              summary: Create a dispatcher token (admin)
              requestBody:
                required: false
                content:
                  application/json:
                    schema:
                      type: object
                      properties:
                        name: {type: [string, "null"]}
                        expires_in_days: {type: integer, minimum: 1, maximum: 3650, description: "Instead of the server's --dispatcher-token-days"}
              responses:
                "201":
                  description: Created; the token is shown only this once
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [dispatcher_id, token]
                        properties: {dispatcher_id: {type: string}, token: {type: string}, expires_ms: {type: [integer, "null"]}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/batches:
            post:
              summary: Ingest a sync batch (device)
              description: |
                Stores each reading once per (device_id, seq). The same idempotency key again gets
                the same acknowledgement and stores nothing. A batch with no readings and a
                heartbeat is a heartbeat. A rejected batch stores nothing.
              parameters:
                - {name: Idempotency-Key, in: header, required: false, schema: {type: string}, description: "DEVICE_ID:BATCH_SEQ, equal to the body's idempotency_key"}
                - {name: Content-Encoding, in: header, required: false, schema: {enum: [gzip, identity]}}
              requestBody:
                required: true
                content:
                  application/json:
                    schema: {$ref: "#/components/schemas/SyncBatch"}
              responses:
                "200":
                  description: Acknowledgement
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [version, idempotency_key, stored, duplicates, acknowledged_alerts]
                        properties:
                          version: {const: 1}
                          idempotency_key: {type: string}
                          stored: {type: integer}
                          duplicates: {type: integer}
                          acknowledged_alerts: {type: array, items: {type: string}}
                          orders: {$ref: "#/components/schemas/SyncOrders"}
                "410":
                  description: |
                    device_erased: the token belonged to a device whose person's data was erased. Nothing is
                    stored; the body's orders.wipe tells the device to wipe its store and stop (WIRE.md).
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [error, orders]
                        properties:
                          error: {type: object}
                          orders: {$ref: "#/components/schemas/SyncOrders"}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "413": {$ref: "#/components/responses/TooLarge"}
                "415": {description: Content-Encoding other than gzip, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "409":
                  description: |
                    store_epoch_rebase (a store that started its numbering over) or idempotency_key_reused (the key
                    with other readings). Nothing was stored; the device re-bases at or above the floors (WIRE.md).
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [error, seq_floor, batch_seq_floor]
                        properties:
                          error: {type: object}
                          seq_floor: {type: integer}
                          batch_seq_floor: {type: integer}
                "422": {$ref: "#/components/responses/OutOfRange"}
                "503": {$ref: "#/components/responses/Unavailable"}
          /v1/heartbeats:
            post:
              summary: A heartbeat alone (device), when its store cannot reserve a batch
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      type: object
                      required: [version, device_id, heartbeat]
                      properties:
                        version: {const: 1}
                        device_id: {type: string}
                        heartbeat: {type: object}
              responses:
                "200": {description: Recorded as contact}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/alerts:
            post:
              summary: An alert or alert update (device); idempotent by (alert_id, update_seq)
              requestBody:
                required: true
                content:
                  application/json:
                    schema: {$ref: "#/components/schemas/AlertUpdate"}
              responses:
                "200":
                  description: Accepted (or already had)
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [version, alert_id, update_seq, duplicate, acknowledged]
                        properties:
                          version: {const: 1}
                          alert_id: {type: string}
                          update_seq: {type: integer}
                "422": {$ref: "#/components/responses/OutOfRange"}
                          duplicate: {type: boolean}
                          acknowledged: {type: boolean}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "413": {$ref: "#/components/responses/TooLarge"}
          /v1/alerts/stream:
            get:
              summary: Dispatcher feed (Server-Sent Events)
              description: |
                References, never the person (read them with GET /v1/alerts/{id}, under the access
                policy and logged): `alert` (data: {alert_id, device_id, kind, state, type,
                update_seq, position: {lat, lon, age_ms}, received_ms}), `alert_acknowledged`
                (data: {alert_id, device_id, acknowledged_ms}), `alert_resolved`, `alert_note`
                (data: {alert_id, note_id, created_ms}), `device_silent` (data: {device_id,
                last_seen_ms, silent_for_ms}) and `device_returned` (data: {device_id,
                last_seen_ms}); only events of alerts the principal may handle now (open, or
                closed within the policy's window). Every event has an increasing `id`; reconnect
                with `Last-Event-ID` (or ?last_event_id=) to get the events after it, at most
                the last 15 minutes of them: a resume from before that starts with a
                `feed_reset` event (re-read the board). Without it the feed starts 15 minutes
                back. Comments (`: keep-alive`) every 5 s.
              parameters:
                - {name: Last-Event-ID, in: header, required: false, schema: {type: string}}
                - {name: last_event_id, in: query, required: false, schema: {type: integer}}
              responses:
                "200": {description: Event stream, content: {text/event-stream: {schema: {type: string}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/alerts/{id}/ack:
            post:
              summary: Acknowledge an alert (dispatcher); the device learns of it in its next batch acknowledgement
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200":
                  description: Acknowledged (idempotent)
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          alert_id: {type: string}
                          device_id: {type: string}
                          acknowledged: {const: true}
                          already_acknowledged: {type: boolean}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/devices/{id}/readings:
            get:
              summary: Stored readings of a device (admin, dispatcher), in seq order, paged
              parameters:
                - {$ref: "#/components/parameters/ID"}
                - {name: from, in: query, schema: {type: integer}, description: "placed_ms >= from (ms since epoch)"}
                - {name: to, in: query, schema: {type: integer}, description: "placed_ms < to"}
                - {name: kind, in: query, schema: {enum: [hr, fix]}}
                - {name: after_seq, in: query, schema: {type: integer}, description: "page cursor: next_after_seq of the previous page"}
                - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}
              responses:
                "200":
                  description: A page
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [device_id, readings, next_after_seq]
                        properties:
                          device_id: {type: string}
                          next_after_seq: {type: [integer, "null"]}
                          readings:
                            type: array
                            items:
                              description: |
                                A wire reading (WIRE.md) plus placed_ms (where it is filed: its wall
                                time if trusted and plausible, else the time the server received it),
                                received_ms, and time_flag (null, no_wall_clock, untrusted_clock,
                                future, before_enrolment).
                              type: object
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/tokens:
            get:
              summary: List tokens (admin) - ids, roles, devices, creation times; never secrets
              description: |
                Limits (issue 17): every endpoint may answer 429 with `Retry-After` (seconds) past
                the per-address or per-token rate; `POST /v1/alerts` with update_seq 0 answers 429
                past the per-device rate of new alerts, and the first refusal of a flood appends
                one `alert_flood` event (data: {device_id, started_ms, burst, per_minute}) to the
                feed. Identifiers (alert ids, path ids) are 1-128 bytes of UTF-8 without control
                characters; path ids are percent-decoded. `/metrics` needs the admin token unless
                the peer is on loopback.
              responses:
                "200": {description: Tokens, content: {application/json: {schema: {type: object, properties: {tokens: {type: array}}}}}}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/tokens/{id}/revoke:
            post:
              summary: Revoke a token (admin); refused from the next request on, on every instance
              parameters:
                - {name: id, in: path, required: true, schema: {type: string}, description: "the part before the dot"}
              responses:
                "200": {description: Revoked, content: {application/json: {schema: {type: object, properties: {token_id: {type: string}, revoked: {const: true}}}}}}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/tokens/{id}/rotate:
            post:
              summary: Replace a token by a new one for the same role and device (admin); the old one is refused at once
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "201":
                  description: The new token, shown only this once
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          replaced_token_id: {type: string}
                          token_id: {type: string}
                          token: {type: string}
                          expires_ms: {type: [integer, "null"], description: "dispatcher tokens: a full lifetime from now"}
                          role: {enum: [device, dispatcher]}
                          device_id: {type: [string, "null"]}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "404": {$ref: "#/components/responses/NotFound"}
          # The dispatcher console (issue 18). Every route below that changes state accepts a bearer
          # token, or the session cookie plus X-CSRF-Token (403 code csrf without it).
          /v1/session:
            post:
              summary: "Sign in: {username, password} -> Set-Cookie trackme_session (HttpOnly, SameSite=Strict) and {account, csrf_token, expires_ms}"
              responses:
                "200": {description: Signed in}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/TooManyRequests"}
                "503": {$ref: "#/components/responses/Unavailable"}
            get:
              summary: The current session (cookie) and its CSRF token
              responses:
                "200": {description: The session}
                "401": {$ref: "#/components/responses/Unauthorized"}
            delete:
              summary: Sign out (cookie and CSRF token); the session ends on every instance
              responses:
                "204": {description: Signed out}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/accounts:
            post:
              summary: "Create an account (admin): {username, password (8-72 bytes), display_name, role}"
              responses:
                "201": {description: "The account (never its password hash)"}
                "400": {$ref: "#/components/responses/BadRequest"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "409": {description: Username taken}
            get:
              summary: Every account (admin)
              responses:
                "200": {description: "{accounts: [...]}"}
          /v1/accounts/{id}/disable:
            post:
              summary: Disable an account (admin); its sessions end
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The account}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/accounts/{id}/enable:
            post:
              summary: Enable an account again (admin)
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The account}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/alerts:
            get:
              summary: "The board (status=open: gravest, then newest first) or the history (status=closed, newest first), with each person; feed_last_id says where to follow the feed from"
              parameters:
                - {name: status, in: query, schema: {enum: [open, closed]}}
                - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}
              responses:
                "200": {description: "{alerts: [...], feed_last_id}"}
          /v1/alerts/{id}:
            get:
              summary: "One alert: person, timeline, notes, track since it opened, heart rate of the last 10 min, device health (AccessPolicy decides)"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The alert}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/alerts/{id}/resolve:
            post:
              summary: "Resolve with {outcome: help_arrived | false_alarm | wearer_safe | unreachable}; the device learns it (WIRE.md)"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{alert_id, device_id, outcome, already_closed}"}
                "400": {$ref: "#/components/responses/BadRequest"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/alerts/{id}/notes:
            post:
              summary: "Add a note {text: 1-2000 characters}; it is data, shown as text"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "201": {description: The note}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/devices:
            get:
              summary: "Every device with its last seen, silence and last heartbeat (admin, dispatcher); its person only where the access policy lets the reader see them now (a dispatcher: around an alert being handled; logged)"
              responses:
                "200": {description: "{devices: [...]}"}
          /v1/devices/{id}/care-settings:
            get:
              summary: The person's care settings, their version, and what the device reports running (admin, a dispatcher around an alert of the person being handled, the wearer of this device, a carer the wearer linked; logged in the person's access log unless the person reads)
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200":
                  description: Care settings (null before any were set)
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          device_id: {type: string}
                          settings: {oneOf: [{$ref: "#/components/schemas/CareSettings"}, {type: "null"}]}
                          updated_ms: {type: [integer, "null"]}
                          updated_by: {type: [string, "null"]}
                          updated_by_name: {type: [string, "null"], description: "the display name of the account that set them"}
                          device_version: {type: [integer, "null"], description: "the version in the device's last heartbeat"}
                          device_conflicts: {type: array, items: {type: string}, description: "fields the device's own configuration overrides (rule.field)"}
                          device_reported_ms: {type: [integer, "null"]}
                "404": {$ref: "#/components/responses/NotFound"}
            put:
              summary: Set the person's care settings (admin on the person's behalf, the wearer of this device, or a carer the wearer linked); the next version
              description: |
                The new version reaches the device in the reply to its next batch (orders.care_settings) and is
                repeated until the device's heartbeat reports running it. The person's profile (console, contact
                escalation) takes the thresholds and contacts at once. Thresholds 20-250 bpm, min_hr below max_hr,
                known rule names; the manual SOS cannot be switched off. `version` in the body is ignored.
              parameters:
                - {$ref: "#/components/parameters/ID"}
              requestBody:
                required: true
                content:
                  application/json:
                    schema: {$ref: "#/components/schemas/CareSettings"}
              responses:
                "200": {description: Stored, content: {application/json: {schema: {$ref: "#/components/schemas/CareSettings"}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/devices/{id}/erase:
            post:
              summary: Erase every row of the device and its person, in every table, and their wearer account (admin on the person's request, or the wearer of this device)
              description: |
                One transaction on either backend: readings, batches, epochs, tokens, care settings, alerts with
                their updates, notes and contact notifications, feed events naming the device or its alerts, and the
                device with the person's profile. A wipe order keyed by a digest of the device's token stays, so the
                device is told to wipe its store at its next sync (410 device_erased); it ages with retired_people.
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200":
                  description: Erased
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          device_id: {type: string}
                          erased: {const: true}
                          rows_deleted: {type: integer}
                          wipe_orders: {type: integer}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          # People's data, Data4Help (issue 20). {id} is a wearer account id, or `me`. Every read goes
          # through AccessPolicy: the wearer reads all of their own; a third party the kinds and window
          # of a consent in force; a dispatcher around an alert it handles. Reads by others are logged.
          /v1/organisations:
            post:
              summary: "An organisation registers itself (no token): {username, password, display_name, role: third_party}"
              security: []
              responses:
                "201": {description: The account}
                "400": {$ref: "#/components/responses/BadRequest"}
                "409": {description: Username taken}
                "429": {$ref: "#/components/responses/TooManyRequests"}
          /v1/people/{id}/devices:
            post:
              summary: "Link a wearer account to an enrolled device (admin): {device_id}; a device is one wearer's (409)"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "201": {description: "{person_id, device_id, already}"}
                "404": {$ref: "#/components/responses/NotFound"}
                "409": {description: Another wearer's device}
          /v1/people/{id}:
            get:
              summary: "The person: name, devices and limits (to themselves), and the caller's grants"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{person_id, display_name, username, devices, grants, limits}"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/people/{id}/heart-rate:
            get:
              summary: "Heart rate in [from, to) (ms; default the last day), within the caller's grants"
              parameters:
                - {$ref: "#/components/parameters/ID"}
                - {$ref: "#/components/parameters/From"}
                - {$ref: "#/components/parameters/To"}
              responses:
                "200": {description: "{person_id, from_ms, to_ms, heart_rate: [{at_ms, bpm, device_id, contact}], truncated}"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/positions:
            get:
              summary: "Positions in [from, to), within the caller's grants"
              parameters:
                - {$ref: "#/components/parameters/ID"}
                - {$ref: "#/components/parameters/From"}
                - {$ref: "#/components/parameters/To"}
              responses:
                "200": {description: "{person_id, from_ms, to_ms, positions: [{at_ms, lat, lon, device_id}], truncated}"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/statistics:
            get:
              summary: "Per UTC day (default the last 7, at most 93): min, mean, max, resting estimate, seconds out of the person's range"
              parameters:
                - {$ref: "#/components/parameters/ID"}
                - {$ref: "#/components/parameters/From"}
                - {$ref: "#/components/parameters/To"}
              responses:
                "200": {description: "{person_id, from_ms, to_ms, days: [{day_ms, readings, min, mean, max, resting_estimate, seconds_out_of_range, limit_min, limit_max}]}"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/alerts:
            get:
              summary: "The person's alerts with their outcomes (newest first), within the caller's grants"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{person_id, alerts: [{alert_id, device_id, kind, state, open, created_ms, acknowledged_ms, outcome, resolved_ms, lat, lon}]}"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/export:
            get:
              summary: "Everything in [from, to) (default all) as a download: format=json (one document) or csv (one table, a record column)"
              parameters:
                - {$ref: "#/components/parameters/ID"}
                - {name: format, in: query, schema: {enum: [json, csv]}}
                - {$ref: "#/components/parameters/From"}
                - {$ref: "#/components/parameters/To"}
              responses:
                "200": {description: "Attachment", content: {application/json: {}, text/csv: {}}}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/track.gpx:
            get:
              summary: "Positions in [from, to) as GPX 1.1, one track per device"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "Attachment", content: {application/gpx+xml: {}}}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/stream:
            get:
              summary: "New readings as Server-Sent Events (event heart_rate or position, data as in the lists) while a grant covers them; access_ended when it ends"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: An event stream, content: {text/event-stream: {}}}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/access-log:
            get:
              summary: "Who read the person's data, when, why and what (the person or the admin), newest first"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{entries: [{id, subject, reader_id, reader_name, reader_role, reason, what, at_ms}]}"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/people/{id}/access-requests:
            get:
              summary: The requests made to the person (the person or the admin)
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{requests: [AccessRequest]}"}
          /v1/people/{id}/carers:
            get:
              summary: The person's carers (the person or the admin)
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{carers: [{carer_id, username, display_name, may_export, granted_ms, granted_by: person | admin}]}"}
                "403": {$ref: "#/components/responses/Forbidden"}
            post:
              summary: "The person names a carer: {carer (a carer account's username), may_export?: false} (the person, or the admin on their behalf); again changes may_export"
              description: |
                A linked carer reads and sets the person's care settings (GET/PUT /v1/devices/{id}/care-settings)
                and reads their data (reason `carer`); downloads it (export, track.gpx) only with may_export; never
                erases it. Every read and change of theirs is in the person's access log. The person ends the link
                at any time (DELETE); erasing the person removes it.
              parameters:
                - {$ref: "#/components/parameters/ID"}
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      type: object
                      required: [carer]
                      properties:
                        carer: {type: string}
                        may_export: {type: boolean}
              responses:
                "201": {description: "Linked: {carer_id, username, display_name, may_export, granted_ms, granted_by}"}
                "200": {description: Already linked; may_export updated}
                "400": {$ref: "#/components/responses/BadRequest"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {description: No carer account with that username}
          /v1/people/{id}/carers/{carer_id}:
            delete:
              summary: "End a carer link: the person (at any time), the admin, or the carer stepping down (carer_id `me`)"
              parameters:
                - {$ref: "#/components/parameters/ID"}
                - {name: carer_id, in: path, required: true, schema: {type: string}}
              responses:
                "200": {description: "{person_id, carer_id, unlinked: true}"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/cared-for:
            get:
              summary: The people the signed-in carer cares for, with their devices
              responses:
                "200": {description: "{people: [{person_id, username, display_name, may_export, granted_ms, devices: [device_id]}]}"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/access-requests:
            post:
              summary: "A third party asks one person: {person (username), kinds: [heart_rate | position | alerts], days: 1-365, data_from_ms?, purpose}. Unanswered for 3 days: refused"
              responses:
                "201": {description: "AccessRequest {id, organisation_id, organisation_name, person_id, person_name, person_username, kinds, days, data_from_ms, purpose, status, requested_ms, answer_by_ms, answered_ms, granted_from_ms, expires_ms, ended_ms, ended_by}; status pending | approved | refused | refused_unanswered | revoked | expired"}
                "400": {$ref: "#/components/responses/BadRequest"}
                "404": {$ref: "#/components/responses/NotFound"}
            get:
              summary: The third party's own requests
              responses:
                "200": {description: "{requests: [AccessRequest]}"}
          /v1/access-requests/{id}/approve:
            post:
              summary: "The person approves: access from data_from_ms (or now) for `days` days, only the kinds named"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The request}
                "409": {description: "Not pending any more (answered, refused after 3 days, revoked)"}
          /v1/access-requests/{id}/refuse:
            post:
              summary: The person refuses
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The request}
                "409": {description: Not pending any more}
          /v1/access-requests/{id}/revoke:
            post:
              summary: Either side ends an approved access at once (open streams end); the organisation may also withdraw a pending request
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The request}
                "409": {description: Nothing to revoke}
          /v1/group-figures:
            post:
              summary: "Anonymised figures over a group {age_from, age_to, south, west, north, east, from_ms, to_ms}, snapped outward to decades, 0.1-degree cells and UTC days (third party, admin)"
              description: |
                Answered only over more than 1,000 distinct people, and only if the group differs from every
                earlier answered group it overlaps by none or more than 1,000 people each way (the
                differencing attack); refused with 422 and code too_few_people or differencing otherwise.
                Never a person-level value: people, readings, mean and percentiles (p10-p90, whole bpm,
                from 10-bpm bins) of heart rate, alerts per kind. simulations/GROUP-FIGURES.md.
              responses:
                "200": {description: "{group, people, readings, mean_heart_rate, percentiles, alerts_by_kind}"}
                "400": {$ref: "#/components/responses/BadRequest"}
                "422": {description: "Refused: too_few_people or differencing, with the reason"}
          /contact/{token}:
            get:
              summary: "An emergency contact's page for an alert (signed, single-use, expiring link); 403 forged, 410 used or expired"
              parameters:
                - {name: token, in: path, required: true, schema: {type: string}}
              responses:
                "200": {description: HTML page}
            post:
              summary: Confirm receipt (once); counts as an acknowledgement
              parameters:
                - {name: token, in: path, required: true, schema: {type: string}}
              responses:
                "200": {description: HTML page}
                "403": {description: Forged link}
                "410": {description: Used or expired link}
          /v1/runs:
            post:
              summary: "A run (organiser, admin): {name, start_ms, end_ms?, code?, gpx}: the course from the GPX document's trkpt (else rtept) points; enrolment starts closed"
              responses:
                "201": {description: "{id, code, name, start_ms, end_ms, enrolment_open, length_m, spectator_url}"}
                "400": {$ref: "#/components/responses/BadRequest"}
                "409": {description: The code is taken}
            get:
              summary: The principal's runs (every run for the admin)
              responses:
                "200": {description: "{runs: [...]}"}
          /v1/runs/{id}:
            get:
              summary: "The run with every runner as its organiser sees them: check-in, consent, newest fix, distance along the course (AccessPolicy reason joined_run)"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "The run with entries: [{device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m}]"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/runs/{id}/enrolment:
            post:
              summary: "Open or close enrolment {open: bool}; runners enrol from their device (heartbeat run: WIRE.md) only while it is open"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: The run}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/runs/{id}/results.csv:
            get:
              summary: "Standings as CSV (rank, name, distance_m, checked_in_ms, last_fix_ms), furthest first"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: CSV, content: {text/csv: {schema: {type: string}}}}
          /v1/runs/{id}/tracks.gpx:
            get:
              summary: Every runner's track of the run as one GPX 1.1 document (one trk per runner)
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: GPX, content: {application/gpx+xml: {schema: {type: string}}}}
          /v1/public/runs/{id}:
            get:
              summary: "The spectator page's data, without an account: the course and the runners who consented to be shown, furthest first, with the leader; no device ids, no one else"
              security: []
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: "{name, start_ms, end_ms, length_m, path: [[lat, lon]], runners: [{id, name, lat, lon, distance_m, fix_ms}], leader}"}
                "404": {$ref: "#/components/responses/NotFound"}
          /runs/{id}:
            get:
              summary: The public spectator page of a run (HTML; reads /v1/public/runs/{id} every second)
              security: []
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: HTML page}
          /v1/fleet/zones:
            post:
              summary: "A zone (fleet operator, admin): {name, polygon: [[lat, lon], ...] (3-1000 corners)}"
              responses:
                "201": {description: The zone}
                "400": {$ref: "#/components/responses/BadRequest"}
          /v1/fleet:
            get:
              summary: "Taxis by zone: each zone's queue of available taxis in arrival order, every taxi with its state; silent (no report for 60 s) taxis marked and out of the queues"
              responses:
                "200": {description: "{zones: [{id, name, polygon, queue: [Taxi], taxis: [Taxi]}], outside: [Taxi]}; Taxi: {device_id, name, state, silent, zone_id, queued_ms, last_report_ms, lat, lon}"}
          /v1/fleet/zones/{id}/next:
            get:
              summary: "For a ride-booking system (a fleet_operator token, POST /v1/fleet/tokens): the first available taxi in the zone's queue"
              parameters:
                - {$ref: "#/components/parameters/ID"}
              responses:
                "200": {description: A Taxi}
                "404": {description: "No such zone, or error.code no_taxi: none available"}
          /v1/fleet/tokens:
            post:
              summary: A bearer token of role fleet_operator for a ride-booking system (admin)
              responses:
                "201": {description: "{token_id, token} (shown once)"}
          /fleet:
            get:
              summary: The fleet page (HTML; a signed-in fleet operator)
              security: []
              responses:
                "200": {description: HTML page}
        components:
          securitySchemes:
            bearer: {type: http, scheme: bearer}
          parameters:
            ID: {name: id, in: path, required: true, schema: {type: string}}
            From: {name: from, in: query, schema: {type: integer}}
            To: {name: to, in: query, schema: {type: integer}}
          responses:
            BadRequest: {description: "Malformed JSON, missing or wrong field (named in error.field)", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            Unauthorized: {description: Missing or wrong token, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            Forbidden: {description: "Right token, wrong role, or another device's data", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            NotFound: {description: No such resource, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            TooLarge: {description: "Body over the limit, compressed or inflated", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            OutOfRange: {description: "invalid_value: a seq, batch_seq, dropped_by_budget or update_seq above 2^53-1 (field named); nothing stored", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            TooManyRequests:
              description: |
                too_many_requests, with Retry-After (seconds): sign-ins from one address past their rate, an account
                after 5 wrong passwords in a row (one attempt a minute), registrations from one address past theirs
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
            Unavailable:
              description: |
                database_damaged (the database failed an integrity check: what to do is in message), or unavailable
                with Retry-After: the disk is full, the database is read-only or unreachable, or too many sign-ins wait
                for a password hash. Nothing was stored.
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
          schemas:
            Error:
              type: object
              required: [error]
              properties:
                error:
                  type: object
                  required: [code, field, message]
                  properties:
                    code: {enum: [missing_field, wrong_type, invalid_value, malformed_json, unauthorized, forbidden, too_large, not_found, conflict, unsupported_media_type, internal, device_erased, too_many_requests, unavailable, database_damaged]}
                    field: {type: [string, "null"]}
                    message: {type: string}
            Timestamp:
              type: object
              required: [mono_ns, boot_id, wall_trusted]
              properties:
                mono_ns: {type: integer, minimum: 0}
                boot_id: {type: string}
                wall_ms: {type: [integer, "null"]}
                wall_trusted: {type: boolean}
                wall_corrected: {type: boolean, description: "wall_ms was corrected on the device from a later trusted time of the same boot (WIRE.md)"}
            SyncBatch:
              type: object
              description: WIRE.md, "A sync batch"
              required: [version, device_id, batch_seq, idempotency_key, dropped_by_budget, readings]
              properties:
                version: {const: 1}
                device_id: {type: string}
                batch_seq: {type: integer}
                idempotency_key: {type: string}
                dropped_by_budget: {type: integer}
                heartbeat:
                  type: [object, "null"]
                  properties:
                    strap: {type: string}
                    gpsd: {type: string}
                    store_depth: {type: integer}
                    store_bytes: {type: integer}
                    battery_pct: {type: [integer, "null"]}
                    battery_low: {type: boolean, description: "the strap's battery is below the device's warning level"}
                    monitoring_paused: {type: boolean, description: "the wearer paused monitoring"}
                    body_location: {enum: [other, chest, wrist, finger, hand, ear_lobe, foot]}
                    profile: {enum: [wearer, runner, taxi], description: "absent from older agents: a wearer"}
                    taxi_state: {enum: [available, unavailable, on_ride], description: "a taxi's availability, with every report"}
                    run:
                      type: [object, "null"]
                      description: "the run a runner joined: its code, consent to be shown to spectators, check-in time"
                      properties:
                        code: {type: string}
                        show: {type: boolean}
                        checked_in_ms: {type: [integer, "null"]}
                    care_version: {type: integer, description: "the care settings version the device runs"}
                    care_conflicts: {type: array, items: {type: string}, description: "care settings its own configuration overrides"}
                readings:
                  type: array
                  items:
                    type: object
                    required: [seq, kind, t]
                    properties:
                      seq: {type: integer, minimum: 1}
                      kind: {enum: [hr, fix]}
                      t: {$ref: "#/components/schemas/Timestamp"}
                      hr: {type: object}
                      fix: {type: object}
            CareSettings:
              type: object
              description: WIRE.md, "Orders in the sync reply"
              properties:
                version: {type: integer}
                min_hr: {type: [integer, "null"], minimum: 20, maximum: 250}
                max_hr: {type: [integer, "null"], minimum: 20, maximum: 250}
                resting_hr: {type: [integer, "null"], minimum: 20, maximum: 250}
                rules: {type: [object, "null"], additionalProperties: {type: boolean}, description: "heart_rate_low, heart_rate_high, no_pulse, contact_lost, strap_silent, manual"}
                contacts: {type: [array, "null"], items: {type: object, properties: {name: {type: string}, relation: {type: string}, phone: {type: string}, email: {type: string}}}}
            SyncOrders:
              type: object
              properties:
                care_settings: {$ref: "#/components/schemas/CareSettings"}
                wipe: {type: object, properties: {ordered_ms: {type: integer}}}
            AlertUpdate:
              type: object
              description: WIRE.md, "An alert or alert update"
              required: [version, alert, update_seq, type, sent]
              properties:
                version: {const: 1}
                alert: {type: object}
                update_seq: {type: integer, minimum: 0}
                type: {enum: [raised, position, cancelled, resolved]}
                sent: {$ref: "#/components/schemas/Timestamp"}
        """
}
