package dev.layover.console;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.ConfigurationException;
import dev.layover.core.Enqueued;
import dev.layover.core.schedule.InvalidScheduleException;
import dev.layover.core.schedule.ScheduleInfo;
import dev.layover.core.control.CancelResult;
import dev.layover.core.control.Pause;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.dlq.ActionOptions;
import dev.layover.dlq.AuditEntry;
import dev.layover.dlq.BulkResult;
import dev.layover.dlq.DeadLetter;
import dev.layover.dlq.DeadLetterFilter;
import dev.layover.dlq.DeadLetterPage;
import dev.layover.dlq.DeadLetterState;
import dev.layover.dlq.DeadLetterSummary;
import dev.layover.dlq.DeadLetters;
import dev.layover.dlq.FacetCounts;
import dev.layover.dlq.RecoverySweep;
import dev.layover.dlq.ReplayOptions;
import dev.layover.dlq.Replayed;
import dev.layover.dlq.Selection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The JSON API ({@code docs/console-api.md}): reads over jobs, dead letters, provider state and
 * the audit log, and the operators' actions, each passed to the dead-letter store or the provider
 * state API with the operator's name for the audit log. Everything that leaves here is masked
 * ({@link Masking}) unless a reveal was asked for.
 */
final class ConsoleApi {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectMapper PRETTY = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final Set<String> MANUAL_REPLAY_STATES = Set.of("parked", "review");
    private static final List<String> JOB_STATES = List.of("scheduled", "running", "rescheduled", "retrying");
    private static final List<String> WAITING_STATES = List.of("scheduled", "rescheduled", "retrying");
    private static final List<String> HISTORY_OUTCOMES = List.of("completed", "parked", "cancelled");
    /** A batch's states ({@code layover.batches_state_check}), in the order a batch moves. */
    static final List<String> BATCH_STATES = List.of("open", "sealed", "submitting", "submitted", "ended", "expired",
            "cancelled", "failed");
    private static final int MAX_IDS = 10_000;
    /**
     * The bulk preview counts a filter with a time range or a text search no further than this
     * ("10,000+"); a filter on states, failure types, job types and keys only is counted exactly
     * from the maintained counts.
     */
    static final long PREVIEW_BOUND = 10_000;
    private static final Duration MAX_HOLD = Duration.ofDays(30);

    private final ConsoleStore store;
    private final ConsoleSql sql;
    private final ConsoleOptions options;
    private final ConsoleSecurity security;

    ConsoleApi(ConsoleStore store, ConsoleSql sql, ConsoleOptions options, ConsoleSecurity security) {
        this.store = store;
        this.sql = sql;
        this.options = options;
        this.security = security;
    }

    void register(ConsoleServlet s) {
        s.get("/session", this::session);
        s.get("/overview", r -> overview());
        s.get("/dead-letters", this::list);
        s.get("/dead-letters/facets", this::facets);
        s.get("/dead-letters/preview", this::preview);
        s.get("/dead-letters/{id}", this::one);
        s.post("/dead-letters/{id}/replay", "replaying a dead letter", this::replayOne);
        s.post("/dead-letters/{id}/discard", "discarding a dead letter", this::discardOne);
        s.post("/dead-letters/{id}/move-back", "moving a dead letter back", this::moveBackOne);
        s.post("/dead-letters/replay", "replaying dead letters", r -> bulk(r, "replay"));
        s.post("/dead-letters/discard", "discarding dead letters", r -> bulk(r, "discard"));
        s.post("/dead-letters/move-back", "moving dead letters back", r -> bulk(r, "move_back"));
        s.get("/jobs", this::jobs);
        s.get("/breakers", r -> breakers());
        s.post("/breakers/{providerKey}/force-open", "forcing a breaker open", r -> forceBreaker(r, true));
        s.post("/breakers/{providerKey}/force-close", "forcing a breaker closed", r -> forceBreaker(r, false));
        s.get("/audit", this::audit);
        s.post("/jobs/{jobType}/{id}/cancel", "cancelling a job", this::cancelJob);
        s.post("/jobs/{jobType}/{id}/signal", "signalling a job", this::signalJob);
        s.get("/pauses", r -> pauses());
        s.post("/pauses/job-type/{jobType}/pause", "pausing", r -> pauseOrResume(r, Pause.Scope.JOB_TYPE, true));
        s.post("/pauses/job-type/{jobType}/resume", "resuming", r -> pauseOrResume(r, Pause.Scope.JOB_TYPE, false));
        s.post("/pauses/key/{key}/pause", "pausing", r -> pauseOrResume(r, Pause.Scope.KEY, true));
        s.post("/pauses/key/{key}/resume", "resuming", r -> pauseOrResume(r, Pause.Scope.KEY, false));
        s.get("/schedules", r -> schedules());
        s.post("/schedules/pause", "pausing a schedule", r -> scheduleAction(r, "pause"));
        s.post("/schedules/resume", "resuming a schedule", r -> scheduleAction(r, "resume"));
        s.post("/schedules/trigger", "triggering a schedule", r -> scheduleAction(r, "trigger"));
        s.get("/history", this::history);
        s.get("/job-runs/{jobType}/{id}", this::jobRuns);
        s.get("/provider-keys/{providerKey}", this::providerKey);
        s.get("/fairness", this::fairness);
        s.post("/fairness/weights", "setting a fairness weight", this::setFairnessWeight);
        s.post("/fairness/weights/revert", "reverting a fairness weight", this::revertFairnessWeight);
        s.get("/limits", this::limits);
        s.post("/limits", "setting a key's limits", this::setLimit);
        s.post("/limits/revert", "reverting a key's limits", this::revertLimit);
        s.get("/workers", r -> workers());
        s.get("/batches", this::batches);
        s.get("/batches/{id}", this::batch);
        s.get("/groups", this::groups);
        s.get("/groups/{id}", this::group);
        s.get("/time-series", r -> timeSeries(r).toJson(r.param("providerKey"), r.param("jobType")));
        s.getSvg("/time-series/{chart}.svg", r -> SvgChart.draw(timeSeries(r), SvgChart.Kind.of(r.path(0)), zone(r)));
    }

    // ---------------------------------------------------------------- time series

    /**
     * The window a request asks for: {@code resolution} 10s, 1m (default) or 1h, {@code minutes}
     * back from now (default 60; at most 60 at 10 s, 10080 at 1 min and 1 h, at least 60 at 1 h),
     * optionally one {@code providerKey} and one {@code jobType}. A 1 min window longer than
     * {@link TimeSeriesData#MAX_POINTS} minutes (6 h) is read from the hour rows: the same counts in
     * 60 times fewer rows, one point per hour ({@code bucketSeconds} 3600 in the answer).
     */
    private TimeSeriesData timeSeries(ConsoleRequest r) {
        String res = r.param("resolution");
        int seconds;
        if (res == null || res.equals("60") || res.equals("1m")) {
            seconds = 60;
        } else if (res.equals("10") || res.equals("10s")) {
            seconds = 10;
        } else if (res.equals("3600") || res.equals("1h")) {
            seconds = 3600;
        } else {
            throw ApiException.badRequest("resolution must be 10s, 1m or 1h, was '" + res + "'", "resolution");
        }
        int minutes = r.intParam("minutes", 60, seconds == 3600 ? 60 : 1, seconds == 10 ? 60 : 7 * 24 * 60);
        String key = one(r, "providerKey");
        String type = one(r, "jobType");
        if (seconds == 60 && minutes > TimeSeriesData.MAX_POINTS) {
            // more minutes than points: each point would sum several minute rows of every key, type
            // and counter (24 h: 1,440 per series); the hour rows of the same counts are 60 times fewer
            return sql.timeSeries(3600, (minutes + 59) / 60, key, type);
        }
        return sql.timeSeries(seconds, minutes * 60 / seconds, key, type);
    }

    /** The chart's time zone: {@code tz}, a zone id such as {@code UTC} or {@code Europe/Berlin}; default UTC. */
    private static java.time.ZoneId zone(ConsoleRequest r) {
        String tz = one(r, "tz");
        if (tz == null) {
            return ZoneOffset.UTC;
        }
        try {
            return java.time.ZoneId.of(tz);
        } catch (java.time.DateTimeException e) {
            throw ApiException.badRequest("tz must be a time zone id such as UTC or Europe/Berlin, was '" + tz + "'", "tz");
        }
    }

    private static String one(ConsoleRequest r, String name) {
        List<String> v = checked(r.params(name), name);
        if (v.size() > 1) {
            throw ApiException.badRequest(name + " may be given once", name);
        }
        return v.isEmpty() ? null : v.get(0);
    }

    // ---------------------------------------------------------------- session

    private JsonNode session(ConsoleRequest r) {
        ObjectNode n = F.objectNode();
        boolean readOnly = security.readOnly(r.auth());
        n.put("readOnly", readOnly);
        n.put("revealAllowed", !readOnly);
        n.put("auth", r.auth().via());
        n.put("anonymous", r.auth().anonymous());
        n.put("csrfToken", r.auth().csrf());
        if (r.auth().user() == null) {
            n.putNull("user");
        } else {
            n.put("user", r.auth().user());
        }
        n.put("tokenHeader", ConsoleSecurity.TOKEN_HEADER);
        n.put("operatorHeader", options.operatorHeader());
        n.put("defaultOperator", options.defaultOperator());
        ObjectNode v = n.putObject("argsValidation");
        v.put("available", store.validatesArgs());
        ArrayNode types = v.putArray("jobTypes");
        store.registeredTypes().forEach(types::add);
        v.put("message", store.validatesArgs() ? null : noValidationMessage(null));
        return n;
    }

    private static String noValidationMessage(String jobType) {
        return "This console was started without the application's job types, so edited args cannot be "
                + "validated against " + (jobType == null ? "their job type" : "job type '" + jobType + "'")
                + ". A replay runs the stored args. To edit args, use a console embedded in the application: "
                + "ReplayConsole.start(layover, options).";
    }

    // ---------------------------------------------------------------- overview

    private JsonNode overview() {
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());

        ObjectNode jobs = out.putObject("jobs");
        ObjectNode byState = jobs.putObject("byState");
        JOB_STATES.forEach(s -> byState.put(s, 0));
        long total = 0;
        long due = 0;
        for (JsonNode row : sql.jobsByState()) {
            String state = row.path("state").asText();
            long n = row.path("n").asLong();
            byState.put(state, n);
            total += n;
            if (!state.equals("running")) {
                due += row.path("due").asLong();
            }
        }
        jobs.put("total", total);
        jobs.put("dueNow", due);

        ObjectNode dead = out.putObject("deadLetters");
        ObjectNode dlByState = dead.putObject("byState");
        for (DeadLetterState s : DeadLetterState.values()) {
            dlByState.put(s.code(), 0);
        }
        ObjectNode parked = dead.putObject("parkedByFailureType");
        ObjectNode review = dead.putObject("reviewByFailureType");
        for (JsonNode row : sql.deadLettersByStateAndFailure()) {
            String state = row.path("state").asText();
            String failure = row.path("failureType").asText();
            long n = row.path("n").asLong();
            dlByState.put(state, dlByState.path(state).asLong() + n);
            if (state.equals("parked")) {
                parked.put(failure, n);
            } else if (state.equals("review")) {
                review.put(failure, n);
            }
        }

        ObjectNode finished = out.putObject("finishedLastHour");
        for (String o : HISTORY_OUTCOMES) {
            finished.put(o, 0);
        }
        String lastFinished = null;
        for (JsonNode row : sql.finishedLastHour()) {
            finished.put(row.path("outcome").asText(), row.path("n").asLong());
            String at = row.path("lastAt").asText(null);
            if (at != null && (lastFinished == null || Instant.parse(at).isAfter(Instant.parse(lastFinished)))) {
                lastFinished = at;
            }
        }
        finished.put("lastFinishedAt", lastFinished);

        out.set("outages", outages(null));

        ArrayNode keys = out.putArray("providerKeys");
        for (JsonNode row : sql.providerKeys()) {
            ObjectNode k = (ObjectNode) row;
            maskField(k, "breakerReason");
            maskField(k, "cooldownDetail");
            keys.add(k);
        }
        return out;
    }

    // ---------------------------------------------------------------- dead letters: reads

    private JsonNode list(ConsoleRequest r) {
        DeadLetterFilter filter = filterFromQuery(r);
        int limit = r.intParam("limit", 50, 1, DeadLetters.MAX_PAGE);
        DeadLetterPage page = store.deadLetters().find(filter, limit, r.param("cursor"));
        ObjectNode out = F.objectNode();
        ArrayNode items = out.putArray("items");
        for (DeadLetterSummary s : page.items()) {
            items.add(summary(s));
        }
        out.put("nextCursor", page.nextCursor());
        out.put("limit", limit);
        out.set("filter", filter.toJson());
        out.set("outages", outages(null));
        return out;
    }

    private JsonNode facets(ConsoleRequest r) {
        FacetCounts c = store.deadLetters().counts(filterFromQuery(r));
        ObjectNode out = F.objectNode();
        out.put("total", c.total());
        out.set("byState", facet(c.byState()));
        out.set("byFailureType", facet(c.byFailureType()));
        out.set("byJobType", facet(c.byJobType()));
        out.set("byProviderKey", facet(c.byProviderKey()));
        return out;
    }

    private static ArrayNode facet(Map<String, Long> counts) {
        ArrayNode a = F.arrayNode();
        counts.forEach((value, count) -> {
            ObjectNode o = a.addObject();
            o.put("value", value);
            o.put("count", count);
        });
        return a;
    }

    /**
     * How many dead letters a bulk action on this filter would change: the count for the
     * confirmation, bounded at {@link #PREVIEW_BOUND} ({@code countMore}/{@code matchingMore}: more).
     */
    private JsonNode preview(ConsoleRequest r) {
        DeadLetterFilter filter = filterFromQuery(r);
        String action = r.param("action") == null ? "replay" : r.param("action");
        List<DeadLetterState> allowed;
        if (action.equals("replay") || action.equals("discard")) {
            allowed = List.of(DeadLetterState.PARKED, DeadLetterState.REVIEW);
        } else if (action.equals("move_back") || action.equals("move-back")) {
            action = "move_back";
            allowed = List.of(DeadLetterState.REVIEW);
        } else {
            throw ApiException.badRequest("action must be replay, discard or move_back, was '" + action + "'",
                    "action");
        }
        ObjectNode out = F.objectNode();
        out.put("action", action);
        out.set("filter", filter.toJson());
        long matching = store.deadLetters().countAtMost(filter, PREVIEW_BOUND);
        out.put("matching", Math.min(matching, PREVIEW_BOUND));
        out.put("matchingMore", matching > PREVIEW_BOUND);
        out.put("bound", PREVIEW_BOUND);
        List<DeadLetterState> states = new ArrayList<>(allowed);
        if (!filter.states().isEmpty()) {
            states.retainAll(filter.states());
        }
        DeadLetterFilter eligible = filter.withStates(states.toArray(DeadLetterState[]::new));
        boolean none = states.isEmpty();
        if (action.equals("replay") && store.validatesArgs()) {
            List<String> types = new ArrayList<>(store.registeredTypes());
            if (!filter.jobTypes().isEmpty()) {
                types.retainAll(filter.jobTypes());
            }
            none |= types.isEmpty();
            eligible = eligible.withJobTypes(types.toArray(String[]::new));
        }
        long count = none ? 0 : store.deadLetters().countAtMost(eligible, PREVIEW_BOUND);
        out.put("count", Math.min(count, PREVIEW_BOUND));
        out.put("countMore", count > PREVIEW_BOUND);
        return out;
    }

    private JsonNode one(ConsoleRequest r) {
        long id = r.id(0);
        boolean reveal = "true".equalsIgnoreCase(r.param("reveal"));
        if (reveal) {
            security.checkStateChanging(r.request(), r.auth(), "revealing masked values");
        }
        DeadLetter d = store.deadLetters().get(id)
                .orElseThrow(() -> ApiException.notFound("dead letter " + id + " does not exist (never parked, or "
                        + "purged by retention)"));
        if (reveal) {
            ObjectNode details = F.objectNode();
            details.put("dead_letter_id", id);
            store.auditLog().record(r.operator(), "reveal", "dead_letter:" + id, 1, null, details.toString());
        }
        return detail(d, reveal, security.readOnly(r.auth()));
    }

    private ObjectNode detail(DeadLetter d, boolean reveal, boolean readOnly) {
        ObjectNode n = F.objectNode();
        boolean[] masked = {false};
        n.put("id", d.id());
        n.put("jobType", d.jobType());
        n.put("jobId", d.jobId());
        n.put("providerKey", d.providerKey());
        n.put("failureType", d.failureType());
        n.put("errorClass", d.errorClass());
        n.put("errorMessage", text(d.errorMessage(), reveal, masked));
        JsonNode args = d.args() == null ? null : parse(d.args());
        if (args != null) {
            JsonNode shown = reveal ? args : Masking.maskKeys(args);
            masked[0] |= !shown.equals(args);
            n.set("args", shown);
            n.put("argsPretty", pretty(shown));
        } else {
            n.putNull("args");
            n.putNull("argsPretty");
        }
        if (d.argsRaw() != null) {
            n.put("argsNotJson", text(new String(d.argsRaw(), StandardCharsets.UTF_8), reveal, masked));
        } else {
            n.putNull("argsNotJson");
        }
        n.put("attempts", d.attempts());
        n.put("reschedules", d.reschedules());
        if (d.priority() == null) {
            n.putNull("priority");
        } else {
            n.put("priority", d.priority());
        }
        n.put("firstEnqueuedAt", str(d.firstEnqueuedAt()));
        n.put("parkedAt", str(d.parkedAt()));
        n.put("parkCount", d.parkCount());
        n.put("state", d.state().code());
        n.put("stateChangedAt", str(d.stateChangedAt()));
        n.put("replayCount", d.replayCount());
        n.put("autoReplayCount", d.autoReplayCount());

        ArrayNode errors = n.putArray("errors");
        for (DeadLetter.AttemptError e : d.errors()) {
            ObjectNode o = errors.addObject();
            if (e.attempt() == null) {
                o.putNull("attempt");
            } else {
                o.put("attempt", e.attempt());
            }
            o.put("at", str(e.at()));
            o.put("kind", e.kind());
            o.put("errorClass", e.errorClass());
            o.put("message", text(e.message(), reveal, masked));
            o.put("stackTrace", text(e.stackTrace(), reveal, masked));
            JsonNode raw = e.json() == null ? null : parse(e.json());
            if (raw != null && raw.isObject()) {
                ObjectNode extra = ((ObjectNode) raw).deepCopy();
                extra.remove(List.of("attempt", "at", "kind", "error_class", "message", "stack_trace"));
                if (!extra.isEmpty()) {
                    JsonNode shown = reveal ? extra : Masking.maskAll(extra);
                    masked[0] |= !shown.equals(extra);
                    o.set("extra", shown);
                }
            }
        }
        ArrayNode replays = n.putArray("replays");
        for (DeadLetter.Replay rp : d.replays()) {
            ObjectNode o = replays.addObject();
            o.put("jobId", rp.jobId());
            o.put("at", str(rp.at()));
            o.put("by", rp.by());
            o.put("kind", rp.kind().code());
            o.put("argsEdited", rp.argsEdited());
        }
        n.set("providerTrail", trail(sql.deadLetterTrail(d.id()), reveal, masked));
        ObjectNode live = sql.liveJob(d.jobType(), d.jobId());
        n.set("liveJob", live);
        n.set("steps", sql.jobSteps(d.jobType(), d.jobId()));
        n.set("stoppedAt", stoppedAt(n.path("errorMessage").asText(null)));
        ArrayNode history = n.putArray("history");
        for (AuditEntry e : store.auditLog().forDeadLetter(d.id())) {
            history.add(audit(e, reveal));
        }

        boolean registered = store.validatesArgs() ? d.jobTypeRegistered() : true;
        boolean stateOk = MANUAL_REPLAY_STATES.contains(d.state().code());
        registered(n, d.jobTypeRegistered());
        n.put("masked", masked[0]);
        n.put("revealed", reveal);
        ObjectNode v = n.putObject("argsValidation");
        boolean canValidate = store.canValidate(d.jobType());
        v.put("available", canValidate);
        if (canValidate) {
            v.putNull("message");
        } else if (store.validatesArgs()) {
            v.put("message", "Job type '" + d.jobType() + "' is not registered in this application's Layover "
                    + "instance, so this dead letter cannot be replayed from here. Register the job type, or "
                    + "discard it.");
        } else {
            v.put("message", noValidationMessage(d.jobType()));
        }
        ObjectNode actions = n.putObject("actions");
        boolean rw = !readOnly;
        actions.put("replay", rw && stateOk && registered);
        actions.put("editArgs", rw && stateOk && canValidate && d.args() != null);
        actions.put("discard", rw && stateOk);
        actions.put("moveBack", rw && d.state() == DeadLetterState.REVIEW);
        actions.put("reveal", rw && !reveal && masked[0]);
        return n;
    }

    private ObjectNode summary(DeadLetterSummary s) {
        ObjectNode o = F.objectNode();
        o.put("id", s.id());
        o.put("jobType", s.jobType());
        o.put("jobId", s.jobId());
        o.put("providerKey", s.providerKey());
        o.put("failureType", s.failureType());
        o.put("errorClass", s.errorClass());
        o.put("errorMessage", Masking.maskText(s.errorMessage()));
        o.put("attempts", s.attempts());
        o.put("reschedules", s.reschedules());
        o.put("parkCount", s.parkCount());
        o.put("state", s.state().code());
        o.put("parkedAt", str(s.parkedAt()));
        o.put("stateChangedAt", str(s.stateChangedAt()));
        o.put("replayCount", s.replayCount());
        registered(o, s.jobTypeRegistered());
        o.put("replayable", MANUAL_REPLAY_STATES.contains(s.state().code())
                && (!store.validatesArgs() || s.jobTypeRegistered()));
        return o;
    }

    /** Whether the application registers the job type; {@code null} when the console has no job types. */
    private void registered(ObjectNode o, boolean registered) {
        if (store.validatesArgs()) {
            o.put("jobTypeRegistered", registered);
        } else {
            o.putNull("jobTypeRegistered");
        }
    }

    // ---------------------------------------------------------------- dead letters: actions

    private JsonNode replayOne(ConsoleRequest r) {
        long id = r.id(0);
        JsonNode argsNode = r.body().get("args");
        String note = r.bodyText("note", 2000);
        String operator = r.operator();
        DeadLetter d = store.deadLetters().get(id)
                .orElseThrow(() -> ApiException.notFound("dead letter " + id + " does not exist (never parked, or "
                        + "purged by retention)"));
        ReplayOptions o = ReplayOptions.by(operator).note(note);
        JsonNode scratch = r.body().get("fromScratch");
        if (scratch != null && !scratch.isNull() && !scratch.isBoolean()) {
            throw ApiException.badRequest("fromScratch is true or false", "fromScratch");
        }
        if (scratch != null && scratch.asBoolean()) {
            o = o.fromScratch(); // the job's stored steps are dropped: every step runs again
        }
        if (argsNode != null && !argsNode.isNull()) {
            if (!store.canValidate(d.jobType())) {
                throw ApiException.badRequest(store.validatesArgs()
                        ? "edited args cannot be validated: job type '" + d.jobType() + "' is not registered in this "
                                + "application's Layover instance"
                        : noValidationMessage(d.jobType()) + " Edited args were refused.", "args");
            }
            JsonNode edited = argsNode;
            if (argsNode.isTextual()) {
                try {
                    edited = JSON.readTree(argsNode.asText());
                } catch (JsonProcessingException e) {
                    JsonLocation at = e.getLocation();
                    throw ApiException.badRequest("args are not valid JSON: " + e.getOriginalMessage()
                            + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"),
                            "args");
                }
                if (edited == null || edited.isMissingNode()) {
                    throw ApiException.badRequest("args are empty: give the job's args as JSON", "args");
                }
            }
            JsonNode stored = d.args() == null ? null : parse(d.args());
            edited = Masking.restoreMasked(edited, stored);
            o = o.args(edited.toString());
        }
        Replayed rp = store.forReplayOf(d.jobType()).replay(id, o);
        ObjectNode out = F.objectNode();
        ObjectNode n = out.putObject("replayed");
        n.put("deadLetterId", rp.deadLetterId());
        n.put("jobType", rp.jobType());
        n.put("jobId", rp.jobId());
        n.put("kind", rp.kind().code());
        n.put("runAt", str(rp.runAt()));
        n.put("argsEdited", rp.argsEdited());
        n.put("auditId", rp.auditId());
        return out;
    }

    private JsonNode discardOne(ConsoleRequest r) {
        return actOnOne(r, store.deadLetters()::discard, "only parked or review dead letters can be discarded");
    }

    private JsonNode moveBackOne(ConsoleRequest r) {
        return actOnOne(r, store.deadLetters()::moveBackToParked,
                "only dead letters in review can be moved back to parked");
    }

    /** Discard or move back one dead letter: 404 when it does not exist, 409 when its state forbids it. */
    private JsonNode actOnOne(ConsoleRequest r, BiFunction<Selection, ActionOptions, BulkResult> action,
            String onlyWhen) {
        long id = r.id(0);
        ActionOptions o = ActionOptions.by(r.operator()).note(r.bodyText("note", 2000));
        existing(id);
        BulkResult res = action.apply(Selection.one(id), o);
        if (res.changed() == 0) {
            throw new ApiException(409, "dead letter " + id + " is " + existing(id).state().code() + "; " + onlyWhen);
        }
        return bulkJson(res);
    }

    private DeadLetter existing(long id) {
        Optional<DeadLetter> d = store.deadLetters().get(id);
        return d.orElseThrow(() -> ApiException.notFound("dead letter " + id + " does not exist (never parked, or "
                + "purged by retention)"));
    }

    private JsonNode bulk(ConsoleRequest r, String action) {
        JsonNode body = r.body();
        Selection selection = selection(body);
        String note = r.bodyText("note", 2000);
        String operator = r.operator();
        BulkResult res;
        if (action.equals("replay")) {
            res = store.forBulkReplay().replay(selection, ReplayOptions.by(operator).note(note));
        } else if (action.equals("discard")) {
            res = store.deadLetters().discard(selection, ActionOptions.by(operator).note(note));
        } else {
            res = store.deadLetters().moveBackToParked(selection, ActionOptions.by(operator).note(note));
        }
        return bulkJson(res);
    }

    private Selection selection(JsonNode body) {
        JsonNode ids = body.get("ids");
        JsonNode filter = body.get("filter");
        boolean hasIds = ids != null && !ids.isNull();
        boolean hasFilter = filter != null && !filter.isNull();
        if (hasIds == hasFilter) {
            throw ApiException.badRequest("say which dead letters: either \"ids\": [1, 2] or \"filter\": {...} "
                    + "(an empty filter {} means every dead letter)");
        }
        if (hasIds) {
            if (!ids.isArray() || ids.isEmpty()) {
                throw ApiException.badRequest("ids must be a non-empty array of dead letter ids", "ids");
            }
            if (ids.size() > MAX_IDS) {
                throw ApiException.badRequest("at most " + MAX_IDS + " ids at once; use a filter for more", "ids");
            }
            List<Long> list = new ArrayList<>();
            for (JsonNode id : ids) {
                if (!id.canConvertToLong() || !id.isIntegralNumber()) {
                    throw ApiException.badRequest("ids must be whole numbers, got " + id, "ids");
                }
                list.add(id.asLong());
            }
            return Selection.ids(list);
        }
        if (!filter.isObject()) {
            throw ApiException.badRequest("filter must be an object", "filter");
        }
        return Selection.matching(filterFromJson(filter));
    }

    private static JsonNode bulkJson(BulkResult res) {
        ObjectNode o = F.objectNode();
        o.put("action", res.action());
        o.put("processed", res.processed());
        o.put("changed", res.changed());
        ObjectNode skipped = o.putObject("skipped");
        res.skipped().forEach((k, v) -> skipped.put(k.name().toLowerCase(java.util.Locale.ROOT), v));
        o.put("skippedTotal", res.skippedTotal());
        o.put("batches", res.batches());
        o.put("tookMs", res.took().toMillis());
        o.put("auditId", res.auditId());
        return o;
    }

    // ---------------------------------------------------------------- jobs

    private JsonNode jobs(ConsoleRequest r) {
        List<String> states = r.params("state");
        for (String s : states) {
            if (!JOB_STATES.contains(s)) {
                throw ApiException.badRequest("state must be one of " + JOB_STATES + ", was '" + s + "'", "state");
            }
        }
        if (states.isEmpty()) {
            states = WAITING_STATES;
        }
        ConsoleSql.JobFilter f = new ConsoleSql.JobFilter(checked(r.params("jobType"), "jobType"),
                checked(r.params("providerKey"), "providerKey"), states, checked(r.params("why"), "why"));
        int limit = r.intParam("limit", 50, 1, 500);
        ConsoleSql.JobCursor after = jobCursor(r.param("cursor"));
        ArrayNode rows = sql.jobs(f, after, limit + 1);
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        ArrayNode items = out.putArray("items");
        String next = null;
        for (int i = 0; i < rows.size() && i < limit; i++) {
            ObjectNode row = (ObjectNode) rows.get(i);
            maskField(row, "rescheduleDetail");
            maskField(row, "lastErrorMessage");
            JsonNode t = row.get("providerTrail");
            row.set("providerTrail", trail(t == null || t.isNull() ? null : t.asText(), false, new boolean[1]));
            items.add(row);
        }
        if (rows.size() > limit) {
            JsonNode last = rows.get(limit - 1);
            ArrayNode c = F.arrayNode();
            c.add(last.path("runAt").asText());
            c.add(last.path("jobType").asText());
            c.add(last.path("id").asText());
            next = Base64.getUrlEncoder().withoutPadding().encodeToString(c.toString().getBytes(StandardCharsets.UTF_8));
        }
        out.put("nextCursor", next);
        out.put("limit", limit);
        ArrayNode st = out.putArray("states");
        states.forEach(st::add);
        // the filter's jobs by why they wait (and key): what the page leads with
        ArrayNode groups = sql.jobsSummary(f, SUMMARY_GROUPS + 1);
        ArrayNode summary = out.putArray("summary");
        long total = 0;
        for (int i = 0; i < groups.size() && i < SUMMARY_GROUPS; i++) {
            ObjectNode g = (ObjectNode) groups.get(i);
            total = g.path("total").asLong();
            g.remove("total");
            maskField(g, "someDetail");
            summary.add(g);
        }
        out.put("total", total);
        out.put("summaryMore", groups.size() > SUMMARY_GROUPS);
        return out;
    }

    private static ConsoleSql.JobCursor jobCursor(String cursor) {
        if (cursor == null) {
            return null;
        }
        try {
            JsonNode c = JSON.readTree(Base64.getUrlDecoder().decode(cursor));
            if (c == null || !c.isArray() || c.size() != 3) {
                throw new IllegalArgumentException();
            }
            return new ConsoleSql.JobCursor(Instant.parse(c.get(0).asText()), c.get(1).asText(), c.get(2).asText());
        } catch (RuntimeException | java.io.IOException e) {
            throw ApiException.badRequest("not a jobs page cursor: " + cursor, "cursor");
        }
    }

    private static List<String> checked(List<String> values, String name) {
        for (String v : values) {
            if (v.length() > 200) {
                throw ApiException.badRequest(name + " values must be at most 200 characters", name);
            }
        }
        return values;
    }

    // ---------------------------------------------------------------- breakers

    private JsonNode breakers() {
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        ArrayNode items = out.putArray("items");
        for (JsonNode row : sql.breakers()) {
            ObjectNode b = (ObjectNode) row;
            maskField(b, "reason");
            maskField(b, "lastFailure");
            items.add(b);
        }
        return out;
    }

    private JsonNode forceBreaker(ConsoleRequest r, boolean open) {
        String key = r.path(0);
        if (key.isBlank() || key.length() > 200) {
            throw ApiException.badRequest("provider key must be 1-200 characters");
        }
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        Duration hold = null;
        JsonNode h = r.body().get("holdForSeconds");
        if (open && h != null && !h.isNull()) {
            if (!h.isIntegralNumber() || h.asLong() < 1 || h.asLong() > MAX_HOLD.toSeconds()) {
                throw ApiException.badRequest("holdForSeconds must be a whole number of seconds, 1-"
                        + MAX_HOLD.toSeconds() + " (leave it out to hold the breaker open until forced closed)",
                        "holdForSeconds");
            }
            hold = Duration.ofSeconds(h.asLong());
        }
        if (!open && sql.breakerState(key) == null) {
            throw ApiException.notFound("provider key '" + key + "' has no breaker");
        }
        String why = "by " + operator + (reason == null ? "" : ": " + reason);
        boolean changed = open
                ? store.providerStates().forceOpen(key, hold, why)
                : store.providerStates().forceClose(key, why);
        ObjectNode details = F.objectNode();
        details.put("changed", changed);
        if (open) {
            if (hold == null) {
                details.putNull("hold_for_seconds");
            } else {
                details.put("hold_for_seconds", hold.toSeconds());
            }
        }
        String action = open ? "force_open" : "force_close";
        long auditId = store.auditLog().record(operator, action, key, changed ? 1 : 0, reason, details.toString());
        ObjectNode out = F.objectNode();
        out.put("providerKey", key);
        out.put("action", action);
        out.put("changed", changed);
        out.put("state", Optional.ofNullable(sql.breakerState(key)).orElse("closed"));
        out.put("auditId", auditId);
        return out;
    }

    // ---------------------------------------------------------------- history

    private JsonNode history(ConsoleRequest r) {
        List<String> outcomes = r.params("outcome");
        for (String o : outcomes) {
            if (!HISTORY_OUTCOMES.contains(o)) {
                throw ApiException.badRequest("outcome must be one of " + HISTORY_OUTCOMES + ", was '" + o + "'",
                        "outcome");
            }
        }
        String q = r.param("q");
        if (q != null && q.length() > 200) {
            throw ApiException.badRequest("q (a job id or idempotency key) must be at most 200 characters", "q");
        }
        Instant from = time(r.param("from"), "from");
        Instant until = time(r.param("until"), "until");
        ConsoleSql.HistoryFilter f = new ConsoleSql.HistoryFilter(checked(r.params("jobType"), "jobType"), outcomes,
                checked(r.params("providerKey"), "providerKey"), from, until, q == null ? null : q.strip());
        int limit = r.intParam("limit", 50, 1, 500);
        ConsoleSql.HistoryCursor before = historyCursor(r.param("cursor"));
        ArrayNode rows = sql.history(f, before, limit + 1);
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        ArrayNode items = out.putArray("items");
        for (int i = 0; i < rows.size() && i < limit; i++) {
            ObjectNode row = (ObjectNode) rows.get(i);
            maskField(row, "detail");
            items.add(row);
        }
        String next = null;
        if (rows.size() > limit) {
            JsonNode last = rows.get(limit - 1);
            next = cursor(last.path("finishedAt").asText(), last.path("jobType").asText(), last.path("jobId").asText());
        }
        out.put("nextCursor", next);
        out.put("limit", limit);
        return out;
    }

    private static String cursor(String... parts) {
        ArrayNode c = F.arrayNode();
        for (String p : parts) {
            c.add(p);
        }
        return Base64.getUrlEncoder().withoutPadding().encodeToString(c.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static ConsoleSql.HistoryCursor historyCursor(String cursor) {
        if (cursor == null) {
            return null;
        }
        try {
            JsonNode c = JSON.readTree(Base64.getUrlDecoder().decode(cursor));
            if (c == null || !c.isArray() || c.size() != 3) {
                throw new IllegalArgumentException();
            }
            return new ConsoleSql.HistoryCursor(Instant.parse(c.get(0).asText()), c.get(1).asText(), c.get(2).asText());
        } catch (RuntimeException | java.io.IOException e) {
            throw ApiException.badRequest("not a history page cursor: " + cursor, "cursor");
        }
    }

    /** One job: queued now or not, every recorded run (with the endpoint that answered), its dead letters. */
    private JsonNode jobRuns(ConsoleRequest r) {
        String jobType = r.path(0);
        String id = r.path(1);
        checkJobPath(jobType, id);
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.put("jobType", jobType);
        out.put("id", id);
        ObjectNode live = sql.queuedJob(jobType, id);
        if (live != null) {
            maskField(live, "rescheduleDetail");
            maskField(live, "lastErrorMessage");
            maskField(live, "lastStackTrace");
        }
        out.set("queued", live);
        ArrayNode runs = out.putArray("runs");
        for (JsonNode row : sql.jobRuns(jobType, id)) {
            ObjectNode o = (ObjectNode) row;
            maskField(o, "detail");
            JsonNode t = o.get("providerTrail");
            ArrayNode trail = trail(t == null || t.isNull() ? null : t.asText(), false, new boolean[1]);
            o.set("providerTrail", trail);
            String answered = null;
            for (JsonNode line : trail) {
                if ("answered".equals(line.path("result").asText())) {
                    answered = line.path("key").asText(null);
                }
            }
            o.put("answeredBy", answered);
            JsonNode a = o.get("args");
            o.set("args", a == null || a.isNull() ? F.nullNode() : Masking.maskKeys(parse(a.asText())));
            runs.add(o);
        }
        out.set("batches", sql.jobBatches(jobType, id));
        out.set("groups", sql.jobGroups(jobType, id));
        out.set("dependencies", sql.jobDependencies(jobType, id));
        out.set("dependents", sql.jobDependents(jobType, id));
        ArrayNode dls = out.putArray("deadLetters");
        for (JsonNode row : sql.jobDeadLetters(jobType, id)) {
            maskField((ObjectNode) row, "errorMessage");
            maskField((ObjectNode) row, "lastStackTrace");
            dls.add(row);
        }
        out.set("steps", sql.jobSteps(jobType, id));
        // where it stopped: the queued job's wait or last error, else (parked) its newest dead letter's error
        JsonNode stopped = F.nullNode();
        if (live != null && !"running".equals(live.path("state").asText())) {
            stopped = stoppedAt(live.path("rescheduleDetail").asText(null));
            if (stopped.isNull()) {
                stopped = stoppedAt(live.path("lastErrorMessage").asText(null));
            }
        } else if (!dls.isEmpty() && !"replayed".equals(dls.get(0).path("state").asText())) {
            stopped = stoppedAt(dls.get(0).path("errorMessage").asText(null));
        }
        out.set("stoppedAt", stopped);
        return out;
    }

    /** A text that begins {@code step 'name'} (docs/steps.md: the run stopped at that step). */
    private static final Pattern AT_STEP = Pattern.compile("^step '(.{1,200}?)'(?:: | )(.*)$", Pattern.DOTALL);

    /**
     * The step a run stopped at, read from a reschedule detail or an error message that names it
     * ({@code step 'segment-7': 429 ...}, written by the engine when a run stops at a step).
     *
     * @param text the (masked) text, or null
     * @return {@code {"step": name, "error": the rest}}, or a JSON null when the text names no step
     */
    static JsonNode stoppedAt(String text) {
        if (text == null) {
            return F.nullNode();
        }
        Matcher m = AT_STEP.matcher(text);
        if (!m.matches()) {
            return F.nullNode();
        }
        ObjectNode o = F.objectNode();
        o.put("step", m.group(1));
        o.put("error", text.startsWith("step '" + m.group(1) + "': ") ? m.group(2) : text);
        return o;
    }

    // ---------------------------------------------------------------- one provider key

    /**
     * A provider key's page: breaker, cooldown, bucket or learned pace, concurrency limit, pause,
     * the jobs waiting on it and why, recent dead letters, what finished in the last hour, and
     * the API key pool it belongs to or names.
     */
    private JsonNode providerKey(ConsoleRequest r) {
        String key = r.path(0);
        if (key.isBlank() || key.length() > 200) {
            throw ApiException.badRequest("provider key must be 1-200 characters", "providerKey");
        }
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.put("providerKey", key);
        ObjectNode state = sql.providerKeyState(key);
        for (String part : List.of("breaker", "cooldown")) {
            JsonNode n = state.get(part);
            if (n instanceof ObjectNode o) {
                maskField(o, "reason");
                maskField(o, "lastFailure");
                maskField(o, "detail");
            }
        }
        if (state.get("pause") instanceof ObjectNode p) {
            maskField(p, "reason");
        }
        out.setAll(state);
        ArrayNode overrides = sql.limitOverrides(key, 1);
        if (overrides.isEmpty()) {
            out.putNull("limitOverride");
        } else {
            ObjectNode o = limitRow((ObjectNode) overrides.get(0));
            o.set("workers", limitApplied(key).getOrDefault(key, F.arrayNode()));
            out.set("limitOverride", o);
        }
        out.set("outage", outages(key).path(0));
        out.set("endpoints", endpoints(key));
        out.set("asEndpoint", asEndpoint(key));
        out.set("interactive", interactive(key));

        ObjectNode jobs = out.putObject("jobs");
        long total = 0;
        ArrayNode byWhy = jobs.putArray("byWhy");
        for (JsonNode row : sql.keyJobsByWhy(key)) {
            byWhy.add(row);
            total += row.path("n").asLong();
        }
        jobs.put("total", total);
        ArrayNode items = jobs.putArray("items");
        ConsoleSql.JobFilter f = new ConsoleSql.JobFilter(List.of(), List.of(key), JOB_STATES, List.of());
        for (JsonNode row : sql.jobs(f, null, 20)) {
            ObjectNode o = (ObjectNode) row;
            maskField(o, "rescheduleDetail");
            maskField(o, "lastErrorMessage");
            o.remove("providerTrail");
            items.add(o);
        }

        ObjectNode dead = out.putObject("deadLetters");
        DeadLetterFilter byKey = DeadLetterFilter.all().withProviderKeys(key);
        FacetCounts c = store.deadLetters().counts(byKey);
        dead.put("total", c.total());
        dead.set("byState", facet(c.byState()));
        dead.set("byFailureType", facet(c.byFailureType()));
        ArrayNode recent = dead.putArray("recent");
        for (DeadLetterSummary s : store.deadLetters().find(byKey, 10, null).items()) {
            recent.add(summary(s));
        }

        ObjectNode finished = out.putObject("finishedLastHour");
        for (String o : HISTORY_OUTCOMES) {
            finished.put(o, 0);
        }
        for (JsonNode row : sql.keyFinishedLastHour(key)) {
            finished.put(row.path("outcome").asText(), row.path("n").asLong());
            if (row.path("outcome").asText().equals("completed") && row.hasNonNull("avgDurationMs")) {
                finished.put("avgCompletedDurationMs", row.path("avgDurationMs").asDouble());
            }
        }

        int hash = key.indexOf('#');
        String pool = hash > 0 ? key.substring(0, hash) : key;
        ArrayNode members = sql.poolMembers(pool);
        if (members.isEmpty() && hash < 0 && key.indexOf(':') > 0) {
            // a provider key such as openai:gpt-4o, served by the pool named after its provider
            pool = key.substring(0, key.indexOf(':'));
            members = sql.poolMembers(pool);
        }
        if (members.isEmpty()) {
            out.putNull("pool");
        } else {
            ObjectNode p = out.putObject("pool");
            p.put("name", pool);
            p.put("memberOf", hash > 0);
            for (JsonNode m : members) {
                maskField((ObjectNode) m, "cooldownReason");
            }
            p.set("members", members);
        }
        return out;
    }

    // ---------------------------------------------------------------- fallback endpoints, outages, workers (issue 41)

    /**
     * The endpoints the key's fallback chains called in the last hour, busiest first: this key's
     * calls through each, and how the endpoint's calls ended (every caller's).
     */
    private ArrayNode endpoints(String key) {
        ArrayNode out = F.arrayNode();
        for (JsonNode row : sql.keyEndpoints(key)) {
            ObjectNode e = out.addObject();
            e.put("providerKey", row.path("endpoint").asText());
            e.put("calls", row.path("calls").asLong());
            e.setAll(callResults(parse(row.path("results").asText("{}"))));
        }
        return out;
    }

    /** The key as an endpoint of fallback chains in the last hour, or null when no chain called it. */
    private JsonNode asEndpoint(String key) {
        JsonNode row = sql.keyAsEndpoint(key);
        JsonNode results = parse(row.path("results").asText("{}"));
        JsonNode usedBy = parse(row.path("usedBy").asText("{}"));
        if (results.isEmpty() && usedBy.isEmpty()) {
            return F.nullNode();
        }
        ObjectNode out = callResults(results);
        ArrayNode by = out.putArray("usedBy");
        usedBy.fields().forEachRemaining(e -> by.addObject().put("providerKey", e.getKey()).put("calls", e.getValue().asLong()));
        return out;
    }

    /**
     * The key's interactive calls (calls made outside jobs, {@code InteractiveCalls}) in the last
     * hour, or null when there were none: admitted, their mean wait, not admitted by reason, calls by
     * outcome (answered: {@code done}; 429s: {@code rate_limited}), tokens reported.
     */
    private JsonNode interactive(String key) {
        JsonNode counts = parse(sql.keyInteractive(key).path("counts").asText("{}"));
        if (counts.isEmpty()) {
            return F.nullNode();
        }
        ObjectNode o = F.objectNode();
        ObjectNode refused = F.objectNode();
        ObjectNode calls = F.objectNode();
        long admitted = 0;
        long waitMs = 0;
        long refusedAll = 0;
        for (var it = counts.fields(); it.hasNext();) {
            var e = it.next();
            String counter = e.getKey().substring(0, e.getKey().indexOf('/'));
            String detail = e.getKey().substring(e.getKey().indexOf('/') + 1);
            long n = e.getValue().asLong();
            switch (counter) {
                case "interactive_admitted" -> admitted += n;
                case "interactive_wait_ms" -> waitMs += n;
                case "interactive_refused" -> {
                    refused.put(detail, n);
                    refusedAll += n;
                }
                case "interactive_call" -> calls.put(detail, n);
                case "input_tokens", "output_tokens", "cached_input_tokens" -> {
                    String name = counter.equals("input_tokens") ? "inputTokens"
                            : counter.equals("output_tokens") ? "outputTokens" : "cachedInputTokens";
                    o.put(name, o.path(name).asLong() + n);
                }
                default -> { }
            }
        }
        o.put("admitted", admitted);
        if (admitted > 0) {
            o.put("meanWaitMs", (double) waitMs / admitted);
        } else {
            o.putNull("meanWaitMs");
        }
        o.put("notAdmitted", refusedAll);
        o.set("notAdmittedBy", refused);
        o.put("answered", calls.path("done").asLong());
        o.put("rateLimited", calls.path("rate_limited").asLong());
        o.put("failed", total(calls) - calls.path("done").asLong());
        o.set("byOutcome", calls);
        return o;
    }

    /** Calls by result ({@code endpoint_call}'s details): answered, 429s, errors (every other result), and each. */
    private static ObjectNode callResults(JsonNode results) {
        ObjectNode o = F.objectNode();
        long answered = results.path("answered").asLong();
        long limited = results.path("rate_limited").asLong();
        long all = total(results);
        o.put("answered", answered);
        o.put("rateLimited", limited);
        o.put("errors", all - answered - limited);
        o.put("made", all);
        o.set("byResult", results.deepCopy());
        return o;
    }

    /** @return the sum of an object's numbers */
    private static long total(JsonNode counts) {
        long t = 0;
        for (JsonNode n : counts) {
            t += n.asLong();
        }
        return t;
    }

    /**
     * Keys whose breaker is not closed, each with what the recovery sweep will do: the parked
     * dead letters it replays once the breaker closes (the failure types it replays by default)
     * and those that wait for a person, and when the next trial call is due.
     */
    private ArrayNode outages(String key) {
        ArrayNode out = F.arrayNode();
        for (JsonNode row : sql.outages(key)) {
            ObjectNode o = out.addObject();
            for (String f : List.of("providerKey", "state", "effectiveState", "openedAt", "openUntil", "reason",
                    "sweepPhase", "trials", "lastTrialAt", "sweepScheduled")) {
                o.set(f, row.get(f));
            }
            maskField(o, "reason");
            ObjectNode bySweep = o.putObject("sweepReplays");
            ObjectNode byPerson = o.putObject("waitsForAPerson");
            boolean sweep = row.path("sweepScheduled").asBoolean(); // without a sweep, every one waits for a person
            parse(row.path("parked").asText("{}")).fields().forEachRemaining(e ->
                    (sweep && SWEEP_REPLAYS.contains(e.getKey()) ? bySweep : byPerson).set(e.getKey(), e.getValue()));
            o.put("sweepReplaysTotal", total(bySweep));
            o.put("waitsForAPersonTotal", total(byPerson));
            String openUntil = row.path("openUntil").asText(null);
            String effective = row.path("effectiveState").asText();
            if ("infinity".equals(openUntil)) {
                o.putNull("nextTrialAt");
                o.put("trial", "none: forced open without an end, it stays open until a person closes it");
            } else if (!effective.equals("open")) {
                o.put("nextTrialAt", row.path("openUntil").asText(null));
                o.put("trial", "due: the key's next call is the trial");
            } else {
                String next = row.path("nextTrialAt").asText(null);
                boolean later = next != null && openUntil != null && Instant.parse(next).isAfter(Instant.parse(openUntil));
                o.put("nextTrialAt", later ? next : openUntil);
                o.put("trial", "after the open period: a waiting job's call, or one parked job replayed as the trial");
            }
        }
        return out;
    }

    /** The failure types the recovery sweep replays unless an application configures others. */
    private static final Set<String> SWEEP_REPLAYS = RecoverySweep.DEFAULT_AUTO_REPLAY.stream().map(FailureType::code)
            .collect(java.util.stream.Collectors.toUnmodifiableSet());

    /**
     * The workers ({@code layover.workers}): each running instance's threads, version,
     * heartbeat and age, and the jobs it runs now; a worker running jobs without a row (an older version)
     * is listed by its jobs.
     */
    private JsonNode workers() {
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.put("staleAfterMs", WORKER_STALE_MS);
        ArrayNode items = out.putArray("items");
        for (JsonNode row : sql.workers()) {
            ObjectNode w = (ObjectNode) row;
            w.put("alive", w.path("hasRow").asBoolean() && w.path("heartbeatAgeMs").asLong() < WORKER_STALE_MS);
            items.add(w);
        }
        return out;
    }

    /** A worker whose row's heartbeat (every 5 s) is older than this reads as stale. */
    static final long WORKER_STALE_MS = 20_000;

    // ---------------------------------------------------------------- groups (issue 46)

    /**
     * Groups ({@code layover.job_groups}), newest first: members by state, callback state;
     * {@code state} {@code open} (the callback waits) or {@code settled} (released or skipped), none
     * for both; {@code limit} 1-500 (default 50).
     */
    private JsonNode groups(ConsoleRequest r) {
        int limit = r.intParam("limit", 50, 1, 500);
        String state = r.param("state");
        if (state != null && !state.equals("open") && !state.equals("settled")) {
            throw ApiException.badRequest("state must be open or settled, was '" + state + "'", "state");
        }
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.set("items", sql.groups(state == null ? null : state.equals("settled"), limit));
        out.put("state", state);
        out.put("limit", limit);
        return out;
    }

    /** One group with its members, open ones first ({@code limit} 1-1000, default 200); 404 when none has that id. */
    private JsonNode group(ConsoleRequest r) {
        String id = r.path(0);
        int limit = r.intParam("limit", 200, 1, 1000);
        ObjectNode g = sql.group(id);
        if (g == null) {
            throw ApiException.notFound("no group has the id '" + id + "' (never made, or deleted by the history "
                    + "retention after its callback finished: docs/composition.md)");
        }
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.set("group", g);
        out.set("members", sql.groupMembers(id, limit));
        ArrayNode parent = F.arrayNode();
        ArrayNode children = F.arrayNode();
        for (JsonNode rel : sql.groupRelatives(id)) {
            ObjectNode o = (ObjectNode) rel;
            (("parent".equals(o.remove("relation").asText())) ? parent : children).add(o);
        }
        out.set("parent", parent.isEmpty() ? F.nullNode() : parent.get(0));
        out.set("children", children);
        out.put("limit", limit);
        return out;
    }

    // ---------------------------------------------------------------- batches (issue 24)

    /**
     * Batches ({@code layover.batch_status}), newest first: {@code state} and {@code providerKey}
     * repeatable filters, {@code limit} 1-500 (default 50), {@code cursor} the previous page's
     * {@code nextCursor}; with what is in flight per key and state ({@code inFlight}, every key).
     */
    private JsonNode batches(ConsoleRequest r) {
        List<String> states = r.params("state");
        for (String st : states) {
            if (!BATCH_STATES.contains(st)) {
                throw ApiException.badRequest("state must be one of " + BATCH_STATES + ", was '" + st + "'", "state");
            }
        }
        List<String> keys = checked(r.params("providerKey"), "providerKey");
        int limit = r.intParam("limit", 50, 1, 500);
        Long before = batchCursor(r.param("cursor"), "cursor", "batches");
        ArrayNode rows = sql.batches(states, keys, before, limit + 1);
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        ArrayNode items = out.putArray("items");
        for (int i = 0; i < rows.size() && i < limit; i++) {
            ObjectNode row = (ObjectNode) rows.get(i);
            maskField(row, "lastError");
            items.add(row);
        }
        out.put("nextCursor", rows.size() > limit ? cursor(rows.get(limit - 1).path("id").asText()) : null);
        out.put("limit", limit);
        ObjectNode filter = out.putObject("filter");
        ArrayNode fs = filter.putArray("state");
        states.forEach(fs::add);
        ArrayNode fk = filter.putArray("providerKey");
        keys.forEach(fk::add);
        out.set("inFlight", sql.batchesInFlight());
        return out;
    }

    /**
     * One batch with its counts, age, saving and last error, and a page of its lines in item order:
     * {@code limit} 1-1000 (default 100), {@code cursor} the previous page's {@code nextCursor}.
     * 404 for an id that is not a whole number or names no batch.
     */
    private JsonNode batch(ConsoleRequest r) {
        String raw = r.path(0);
        long id;
        try {
            id = Long.parseLong(raw);
        } catch (NumberFormatException e) {
            throw ApiException.notFound("no batch with id '" + raw + "': a batch id is a whole number (the id of "
                    + "layover.batch_status, as in lo-batch-<id>)");
        }
        int limit = r.intParam("limit", 100, 1, 1000);
        Long after = batchCursor(r.param("cursor"), "cursor", "batch lines");
        ObjectNode b = sql.batch(id);
        if (b == null) {
            throw ApiException.notFound("batch " + id + " does not exist (never made, or deleted: finished batches "
                    + "are kept until deleted, docs/batches.md)");
        }
        maskField(b, "lastError");
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.set("batch", b);
        ArrayNode rows = sql.batchItems(id, after == null ? 0 : after, limit + 1);
        ArrayNode items = out.putArray("items");
        for (int i = 0; i < rows.size() && i < limit; i++) {
            ObjectNode row = (ObjectNode) rows.get(i);
            maskField(row, "error");
            items.add(row);
        }
        out.put("nextCursor", rows.size() > limit ? cursor(rows.get(limit - 1).path("id").asText()) : null);
        out.put("limit", limit);
        return out;
    }

    /** A batch or line page cursor: one id, base64url JSON as the other pages' cursors; 400 otherwise. */
    private static Long batchCursor(String cursor, String field, String what) {
        if (cursor == null) {
            return null;
        }
        try {
            JsonNode c = JSON.readTree(Base64.getUrlDecoder().decode(cursor));
            if (c == null || !c.isArray() || c.size() != 1) {
                throw new IllegalArgumentException();
            }
            long id = Long.parseLong(c.get(0).asText());
            if (id < 0) {
                throw new IllegalArgumentException();
            }
            return id;
        } catch (RuntimeException | java.io.IOException e) {
            throw ApiException.badRequest("not a " + what + " page cursor: " + cursor, field);
        }
    }

    // ---------------------------------------------------------------- fair share (issue 19)

    /** The most weight rows {@code GET /api/fairness} lists ({@code weightsMore}: there are more). */
    static final int MAX_WEIGHT_ROWS = 200;
    /** The most a fairness weight may be ({@code fairness_weights_weight_check}). */
    static final double MAX_FAIRNESS_WEIGHT = 1_000_000;

    /**
     * A provider key's fair share: its fairness keys from {@code layover.fairness}, most waiting
     * first, at most {@code limit} (1-500, default 50; {@code more}: the key has more, the totals
     * count them all), its fair queue line ({@code null}: the key never had one), and the weights
     * of fairness keys and patterns (all keys', operators' first, at most {@link #MAX_WEIGHT_ROWS}).
     */
    private JsonNode fairness(ConsoleRequest r) {
        String key = r.param("providerKey");
        if (key == null || key.isBlank() || key.length() > 200) {
            throw ApiException.badRequest("providerKey must be 1-200 characters", "providerKey");
        }
        int limit = r.intParam("limit", 50, 1, 500);
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        out.put("providerKey", key);
        ArrayNode rows = sql.fairness(key, limit + 1);
        JsonNode first = rows.isEmpty() ? null : rows.get(0);
        out.put("flows", first == null ? 0 : first.path("flows").asLong());
        for (String t : List.of("waiting", "untagged", "running")) {
            String col = "total" + Character.toUpperCase(t.charAt(0)) + t.substring(1);
            out.put(t, first == null ? 0 : first.path(col).asLong());
        }
        out.set("fairQueue", sql.fairLine(key));
        out.put("limit", limit);
        out.put("more", rows.size() > limit);
        ArrayNode items = out.putArray("items");
        for (int i = 0; i < rows.size() && i < limit; i++) {
            ObjectNode o = (ObjectNode) rows.get(i);
            for (String col : List.of("flows", "totalWaiting", "totalUntagged", "totalRunning")) {
                o.remove(col);
            }
            items.add(o);
        }
        ArrayNode weights = sql.fairnessWeights(MAX_WEIGHT_ROWS + 1);
        out.put("weightsMore", weights.size() > MAX_WEIGHT_ROWS);
        ArrayNode w = out.putArray("weights");
        for (int i = 0; i < weights.size() && i < MAX_WEIGHT_ROWS; i++) {
            ObjectNode o = (ObjectNode) weights.get(i);
            maskField(o, "reason");
            w.add(o);
        }
        return out;
    }

    /** The body's {@code pattern}: a fairness key or a pattern with {@code *}, 1-200 characters. */
    private static String fairnessPattern(ConsoleRequest r) {
        return requiredName(r, "pattern", "a fairness key or a pattern with *",
                "a fairness key (e.g. tenant:42) or a pattern with * (e.g. tenant:premium-*)");
    }

    /**
     * A required text field of the body naming a key or pattern: a string, not blank, at most 200
     * characters (the tables' checks), no text the database cannot store; 400 naming it otherwise.
     */
    private static String requiredName(ConsoleRequest r, String field, String what, String examples) {
        JsonNode v = r.body().get(field);
        if (v != null && !v.isNull() && !v.isTextual()) {
            throw ApiException.badRequest(field + " must be a string: " + what, field);
        }
        String s = v == null || v.isNull() ? "" : v.asText();
        if (s.isBlank()) {
            throw ApiException.badRequest(field + " is required: " + examples, field);
        }
        if (s.length() > 200) {
            throw ApiException.badRequest(field + " must be at most 200 characters, was " + s.length(), field);
        }
        return InputText.check(s, field);
    }

    private JsonNode setFairnessWeight(ConsoleRequest r) {
        String pattern = fairnessPattern(r);
        JsonNode w = r.body().get("weight");
        if (w == null || w.isNull()) {
            throw ApiException.badRequest("weight is required: a number above 0, at most 1,000,000", "weight");
        }
        if (!w.isNumber() || !Double.isFinite(w.asDouble())) {
            throw ApiException.badRequest("weight must be a number above 0, at most 1,000,000, was "
                    + (w.isNumber() ? w.toString() : "a " + w.getNodeType().toString().toLowerCase(java.util.Locale.ROOT)),
                    "weight");
        }
        double weight = w.asDouble();
        if (!(weight > 0) || weight > MAX_FAIRNESS_WEIGHT) {
            throw ApiException.badRequest("weight must be above 0 and at most 1,000,000, was " + w, "weight");
        }
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        String why = "by " + operator + (reason == null ? "" : ": " + reason);
        Double before = store.providerStates().setFairnessWeight(pattern, weight, why);
        ObjectNode details = F.objectNode();
        putWeight(details, "before", before);
        details.put("after", weight);
        return audited(operator, "set_fairness_weight", "pattern", pattern, "fairness:", reason, details);
    }

    private JsonNode revertFairnessWeight(ConsoleRequest r) {
        String pattern = fairnessPattern(r);
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        Double removed = store.providerStates().revertFairnessWeight(pattern);
        if (removed == null) {
            throw ApiException.notFound("pattern '" + pattern + "' has no weight set by an operator (nothing to revert)");
        }
        double now = sql.weightInForce(pattern);
        ObjectNode details = F.objectNode();
        details.put("removed", removed);
        details.put("now", now);
        return audited(operator, "revert_fairness_weight", "pattern", pattern, "fairness:", reason, details);
    }

    /**
     * Records an operator's change of one weight or limit in the audit log (subject
     * {@code <subjectPrefix><name>}, the details as they are).
     *
     * @return the answer: {@code field}: the name, the action, the details' fields, {@code auditId}
     */
    private ObjectNode audited(String operator, String action, String field, String name, String subjectPrefix,
            String reason, ObjectNode details) {
        long auditId = store.auditLog().record(operator, action, subjectPrefix + name, 1, reason, details.toString());
        ObjectNode out = F.objectNode();
        out.put(field, name);
        out.put("action", action);
        out.setAll(details);
        out.put("auditId", auditId);
        return out;
    }

    private static void putWeight(ObjectNode o, String name, Double w) {
        if (w == null) {
            o.putNull(name);
        } else {
            o.put(name, w);
        }
    }

    // ---------------------------------------------------------------- limits at run time (issue 19)

    /** The most groups the jobs page's summary shows ({@code summaryMore}: there are more). */
    static final int SUMMARY_GROUPS = 30;
    /** The most override rows {@code GET /api/limits} lists ({@code more}: there are more). */
    static final int MAX_LIMIT_ROWS = 200;
    /** A limit's dimensions, as the body and the answers name them. */
    static final List<String> LIMIT_DIMENSIONS = List.of("requestsPerMinute", "tokensPerMinute", "inputTokensPerMinute",
            "outputTokensPerMinute", "maxInFlight");
    private static final Set<String> SET_LIMIT_FIELDS = Set.of("key", "requestsPerMinute", "tokensPerMinute",
            "inputTokensPerMinute", "outputTokensPerMinute", "maxInFlight", "reason");
    private static final Set<String> REVERT_LIMIT_FIELDS = Set.of("key", "reason");

    /**
     * Operators' limits at run time ({@code layover.limit_overrides}), newest first, at most
     * {@link #MAX_LIMIT_ROWS}, or only {@code key}'s; each with the key's bucket and concurrency
     * rows as the database holds them now (the workers write them), {@code null} when it has none.
     */
    private JsonNode limits(ConsoleRequest r) {
        String key = r.param("key");
        if (key != null && key.length() > 200) {
            throw ApiException.badRequest("key must be at most 200 characters, was " + key.length(), "key");
        }
        ObjectNode out = F.objectNode();
        out.put("at", sql.dbNow());
        ArrayNode rows = sql.limitOverrides(key, MAX_LIMIT_ROWS + 1);
        out.put("more", rows.size() > MAX_LIMIT_ROWS);
        ArrayNode items = out.putArray("items");
        Map<String, ArrayNode> applied = limitApplied(key);
        for (int i = 0; i < rows.size() && i < MAX_LIMIT_ROWS; i++) {
            ObjectNode o = limitRow((ObjectNode) rows.get(i));
            o.set("workers", applied.getOrDefault(o.path("key").asText(), F.arrayNode()));
            items.add(o);
        }
        return out;
    }

    /**
     * Whether each worker applies each override ({@code layover.workers.limits}), by key:
     * since when, and whether it is the override as it stands (a worker that has not refreshed
     * yet applies an earlier one, or none: then no {@code appliedAt}).
     */
    private Map<String, ArrayNode> limitApplied(String key) {
        Map<String, ArrayNode> out = new java.util.HashMap<>();
        for (JsonNode row : sql.limitApplied(key)) {
            ObjectNode w = (ObjectNode) row;
            if (!w.path("appliesIt").asBoolean()) {
                w.putNull("appliedAt");
            }
            String k = w.remove("limitKey").asText();
            out.computeIfAbsent(k, x -> F.arrayNode()).add(w);
        }
        return out;
    }

    /** An override row of {@link ConsoleSql#LIMIT_OVERRIDES} with its bucket and concurrency columns nested. */
    private static ObjectNode limitRow(ObjectNode row) {
        ObjectNode o = F.objectNode();
        for (String name : List.of("key", "requestsPerMinute", "tokensPerMinute", "inputTokensPerMinute",
                "outputTokensPerMinute", "maxInFlight", "setBy", "setAt", "reason")) {
            o.set(name, row.get(name));
        }
        maskField(o, "reason");
        ObjectNode bucket = F.objectNode();
        for (String d : LIMIT_DIMENSIONS.subList(0, 4)) {
            bucket.set(d, row.get("bucket" + Character.toUpperCase(d.charAt(0)) + d.substring(1)));
        }
        boolean hasBucket = LIMIT_DIMENSIONS.subList(0, 4).stream().anyMatch(d -> !bucket.get(d).isNull());
        o.set("bucket", hasBucket ? bucket : F.nullNode());
        if (row.get("concurrencyMaxInFlight").isNull()) {
            o.putNull("concurrency");
        } else {
            ObjectNode c = o.putObject("concurrency");
            c.set("maxInFlight", row.get("concurrencyMaxInFlight"));
            c.set("inFlight", row.get("concurrencyInFlight"));
        }
        return o;
    }

    /** The body's {@code key}: a provider key or a limit key, 1-200 characters. */
    private static String limitKey(ConsoleRequest r) {
        return requiredName(r, "key", "a provider key or a limit key",
                "a provider key (e.g. openai:gpt-4o) or a limit key (e.g. tenant:42)");
    }

    /** A field the endpoint does not take is refused: a misspelt dimension would silently be left as configured. */
    private static void onlyFields(ConsoleRequest r, Set<String> allowed) {
        for (java.util.Iterator<String> it = r.body().fieldNames(); it.hasNext();) {
            String name = it.next();
            if (!allowed.contains(name)) {
                throw ApiException.badRequest("unknown field '" + name + "': the body takes "
                        + String.join(", ", allowed.stream().sorted().toList()), name);
            }
        }
    }

    /** A rate dimension of the body: absent or null, else a JSON number above 0, at most {@link LimitOverride#MAX_PER_MINUTE}. */
    private static Double rate(ConsoleRequest r, String name) {
        JsonNode v = r.body().get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        String range = " above 0, at most " + String.format(java.util.Locale.ROOT, "%,d", (long) LimitOverride.MAX_PER_MINUTE)
                + " a minute";
        if (!v.isNumber()) {
            throw ApiException.badRequest(name + " must be a number" + range + ", was a "
                    + v.getNodeType().toString().toLowerCase(java.util.Locale.ROOT), name);
        }
        double d = v.asDouble();
        if (!(d > 0) || !Double.isFinite(d) || d > LimitOverride.MAX_PER_MINUTE) {
            throw ApiException.badRequest(name + " must be" + range + ", was " + v, name);
        }
        return d;
    }

    /** The body's {@code maxInFlight}: absent or null, else a whole number 1 to {@link LimitOverride#MAX_IN_FLIGHT}. */
    private static Integer maxInFlight(ConsoleRequest r) {
        JsonNode v = r.body().get("maxInFlight");
        if (v == null || v.isNull()) {
            return null;
        }
        String range = " 1 to " + String.format(java.util.Locale.ROOT, "%,d", LimitOverride.MAX_IN_FLIGHT);
        if (!v.isNumber()) {
            throw ApiException.badRequest("maxInFlight must be a whole number" + range + ", was a "
                    + v.getNodeType().toString().toLowerCase(java.util.Locale.ROOT), "maxInFlight");
        }
        boolean whole = v.isIntegralNumber() || (Double.isFinite(v.asDouble()) && v.asDouble() == Math.rint(v.asDouble()));
        if (!whole) {
            throw ApiException.badRequest("maxInFlight must be a whole number" + range + ", was " + v, "maxInFlight");
        }
        java.math.BigDecimal n = v.decimalValue();
        if (n.compareTo(java.math.BigDecimal.ONE) < 0 || n.compareTo(java.math.BigDecimal.valueOf(LimitOverride.MAX_IN_FLIGHT)) > 0) {
            throw ApiException.badRequest("maxInFlight must be" + range + ", was " + v, "maxInFlight");
        }
        return n.intValueExact();
    }

    private JsonNode setLimit(ConsoleRequest r) {
        onlyFields(r, SET_LIMIT_FIELDS);
        String key = limitKey(r);
        Double rpm = rate(r, "requestsPerMinute");
        Double tpm = rate(r, "tokensPerMinute");
        Double itpm = rate(r, "inputTokensPerMinute");
        Double otpm = rate(r, "outputTokensPerMinute");
        Integer mif = maxInFlight(r);
        if (rpm == null && tpm == null && itpm == null && otpm == null && mif == null) {
            throw ApiException.badRequest("set at least one of " + String.join(", ", LIMIT_DIMENSIONS)
                    + " (to give the key its configured limits back, revert)");
        }
        LimitOverride limit;
        try {
            limit = new LimitOverride(rpm, tpm, itpm, otpm, mif);
        } catch (ConfigurationException e) {
            throw ApiException.badRequest(e.getMessage());
        }
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        String why = "by " + operator + (reason == null ? "" : ": " + reason);
        LimitOverride before = store.providerStates().setLimit(key, limit, why);
        ObjectNode details = F.objectNode();
        details.set("before", limitJson(before));
        details.set("after", limitJson(limit));
        return audited(operator, "set_limit", "key", key, "limit:", reason, details);
    }

    private JsonNode revertLimit(ConsoleRequest r) {
        onlyFields(r, REVERT_LIMIT_FIELDS);
        String key = limitKey(r);
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        LimitOverride removed = store.providerStates().revertLimit(key);
        if (removed == null) {
            throw ApiException.notFound("key '" + key + "' has no limits set by an operator (nothing to revert)");
        }
        ObjectNode details = F.objectNode();
        details.set("removed", limitJson(removed));
        return audited(operator, "revert_limit", "key", key, "limit:", reason, details);
    }

    /** An override's five dimensions ({@code null}: as configured), or a null node for no override. */
    private static JsonNode limitJson(LimitOverride o) {
        if (o == null) {
            return F.nullNode();
        }
        ObjectNode n = F.objectNode();
        n.put("requestsPerMinute", o.requestsPerMinute());
        n.put("tokensPerMinute", o.tokensPerMinute());
        n.put("inputTokensPerMinute", o.inputTokensPerMinute());
        n.put("outputTokensPerMinute", o.outputTokensPerMinute());
        n.put("maxInFlight", o.maxInFlight());
        return n;
    }

    // ---------------------------------------------------------------- cancel, pause, resume

    private JsonNode cancelJob(ConsoleRequest r) {
        String jobType = r.path(0);
        String id = r.path(1);
        checkJobPath(jobType, id);
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        CancelResult res = store.control().cancel(jobType, id, operator, reason);
        if (res.status() == CancelResult.Status.NOT_FOUND) {
            throw ApiException.notFound("no live job " + jobType + "/" + id + " (finished, parked or cancelled already)");
        }
        ObjectNode details = F.objectNode();
        details.put("status", res.status().name().toLowerCase(java.util.Locale.ROOT));
        if (res.deadLetterId() != null) {
            details.put("dead_letter_id", res.deadLetterId());
        }
        long auditId = store.auditLog().record(operator, "cancel", "job:" + jobType + "/" + id, 1, reason,
                details.toString());
        ObjectNode out = F.objectNode();
        out.put("jobType", jobType);
        out.put("id", id);
        out.put("status", res.status().name().toLowerCase(java.util.Locale.ROOT));
        if (res.deadLetterId() == null) {
            out.putNull("deadLetterId");
        } else {
            out.put("deadLetterId", res.deadLetterId());
        }
        out.put("auditId", auditId);
        return out;
    }

    /**
     * Sends a signal to a job waiting for it ({@code layover.signal}, docs/composition.md): body
     * {@code {"name": "approved", "payload": {...}}} (payload optional, any JSON). 404 when the job
     * does not wait for that signal; audited as {@code signal}.
     */
    private JsonNode signalJob(ConsoleRequest r) {
        String jobType = r.path(0);
        String id = r.path(1);
        checkJobPath(jobType, id);
        String name = r.bodyText("name", 200);
        if (name == null || name.isBlank()) {
            throw ApiException.badRequest("name: the signal's name, 1-200 characters", "name");
        }
        JsonNode payload = r.body().get("payload");
        String json = payload == null || payload.isMissingNode() ? null : payload.toString();
        if (!sql.signal(jobType, id, name, json)) {
            throw ApiException.notFound("no " + jobType + " job with the id '" + id + "' waits for signal '" + name
                    + "' (it never asked, its wait timed out, or it was signalled already)");
        }
        String operator = r.operator();
        long auditId = store.auditLog().record(operator, "signal", "job:" + jobType + "/" + id, 1, name, null);
        ObjectNode out = F.objectNode();
        out.put("jobType", jobType);
        out.put("id", id);
        out.put("name", name);
        out.put("auditId", auditId);
        return out;
    }

    /** A job's type and id from a path: 400 unless each is 1-200 characters. */
    private static void checkJobPath(String jobType, String id) {
        if (jobType.isBlank() || jobType.length() > 200 || id.isBlank() || id.length() > 200) {
            throw ApiException.badRequest("job type and id must be 1-200 characters");
        }
    }

    private JsonNode pauses() {
        ObjectNode out = F.objectNode();
        ArrayNode active = out.putArray("active");
        store.control().activePauses().forEach(p -> active.add(pause(p)));
        ArrayNode recent = out.putArray("recent");
        store.control().recentPauses(20).forEach(p -> recent.add(pause(p)));
        return out;
    }

    private JsonNode pauseOrResume(ConsoleRequest r, Pause.Scope scope, boolean pause) {
        String target = r.path(0);
        if (target.isBlank() || target.length() > 200) {
            throw ApiException.badRequest((scope == Pause.Scope.JOB_TYPE ? "job type" : "key") + " must be 1-200 characters");
        }
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        Pause p;
        boolean changed;
        if (pause) {
            boolean already = store.control().activePauses().stream()
                    .anyMatch(x -> x.scope() == scope && x.target().equals(target));
            p = scope == Pause.Scope.JOB_TYPE ? store.control().pauseJobType(target, operator, reason)
                    : store.control().pauseKey(target, operator, reason);
            changed = !already;
        } else {
            Optional<Pause> ended = scope == Pause.Scope.JOB_TYPE ? store.control().resumeJobType(target, operator)
                    : store.control().resumeKey(target, operator);
            if (ended.isEmpty()) {
                throw ApiException.notFound((scope == Pause.Scope.JOB_TYPE ? "job type '" : "key '") + target
                        + "' is not paused");
            }
            p = ended.get();
            changed = true;
        }
        ObjectNode details = F.objectNode();
        details.put("pause_id", p.id());
        if (pause) {
            details.put("held_jobs", p.heldJobs());
        } else {
            details.put("released_jobs", p.releasedJobs() == null ? 0 : p.releasedJobs());
        }
        String subject = scope.code() + ":" + target;
        long auditId = store.auditLog().record(operator, pause ? "pause" : "resume", subject, changed ? 1 : 0, reason,
                details.toString());
        ObjectNode out = pause(p);
        out.put("changed", changed);
        out.put("auditId", auditId);
        return out;
    }

    private static ObjectNode pause(Pause p) {
        ObjectNode o = F.objectNode();
        o.put("id", p.id());
        o.put("scope", p.scope().code());
        o.put("target", p.target());
        o.put("pausedAt", str(p.pausedAt()));
        o.put("pausedBy", p.pausedBy());
        o.put("reason", Masking.maskText(p.reason()));
        o.put("heldJobs", p.heldJobs());
        o.put("active", p.active());
        o.put("resumedAt", str(p.resumedAt()));
        o.put("resumedBy", p.resumedBy());
        if (p.releasedJobs() == null) {
            o.putNull("releasedJobs");
        } else {
            o.put("releasedJobs", p.releasedJobs());
        }
        return o;
    }

    // ---------------------------------------------------------------- schedules (recurring jobs)

    private JsonNode schedules() {
        ObjectNode out = F.objectNode();
        ArrayNode items = out.putArray("items");
        for (ScheduleInfo i : store.schedules().list(null)) {
            items.add(schedule(i));
        }
        return out;
    }

    private static ObjectNode schedule(ScheduleInfo i) {
        ObjectNode o = F.objectNode();
        o.put("tenant", i.tenant());
        o.put("name", i.name());
        o.put("jobType", i.jobType());
        o.put("source", i.source());
        o.put("timing", i.cron() != null ? i.cron() + " (" + i.zone() + ")" : "every " + i.every());
        o.put("paused", i.paused());
        o.put("removed", i.removed());
        o.put("nextAt", str(i.nextAt()));
        o.put("heldByOverlap", i.heldByOverlap());
        o.put("lastAt", str(i.lastAt()));
        o.put("lastJobId", i.lastJobId());
        o.put("lastOutcome", i.lastOutcome());
        o.put("lastJobState", i.lastJobState());
        o.put("missed", i.missed());
        o.put("overlap", i.overlap());
        if (i.argsJson() == null) {
            o.putNull("args");
        } else {
            try {
                o.set("args", Masking.maskKeys(new ObjectMapper().readTree(i.argsJson())));
            } catch (java.io.IOException e) {
                o.put("args", Masking.maskText(i.argsJson()));
            }
        }
        return o;
    }

    /**
     * Pauses, resumes or triggers one schedule, named in the body ({@code tenant}, "" or absent for
     * the code's; {@code name}; {@code reason}), and records it in the audit log (subject
     * {@code schedule:<tenant>/<name>}).
     */
    private JsonNode scheduleAction(ConsoleRequest r, String action) {
        String tenant = r.bodyText("tenant", 60);
        String t = tenant == null ? "" : tenant;
        String name = r.bodyText("name", 90);
        if (name == null) {
            throw ApiException.badRequest("name is required", "name");
        }
        String reason = r.bodyText("reason", 500);
        String operator = r.operator();
        ScheduleInfo info = store.schedules().get(t, name).orElseThrow(() -> ApiException.notFound(
                "no schedule '" + name + "'" + (t.isEmpty() ? "" : " of tenant '" + t + "'")));
        ObjectNode details = F.objectNode();
        boolean changed;
        try {
            switch (action) {
                case "pause" -> changed = store.schedules().pause(t, name);
                case "resume" -> changed = store.schedules().resume(t, name);
                default -> {
                    Enqueued e = store.schedulesFor(info.jobType()).triggerNow(t, name).orElseThrow(() ->
                            ApiException.notFound("no schedule '" + name + "'"));
                    details.put("job_id", e.id());
                    changed = e.created();
                }
            }
        } catch (InvalidScheduleException e) {
            throw ApiException.badRequest(e.getMessage());
        }
        long auditId = store.auditLog().record(operator, "schedule_" + action, "schedule:" + t + "/" + name,
                changed ? 1 : 0, reason, details.toString());
        ObjectNode out = schedule(store.schedules().get(t, name).orElse(info));
        out.put("changed", changed);
        if (details.has("job_id")) {
            out.put("jobId", details.get("job_id").asText());
        }
        out.put("auditId", auditId);
        return out;
    }

    // ---------------------------------------------------------------- audit

    private JsonNode audit(ConsoleRequest r) {
        int limit = r.intParam("limit", 50, 1, 1000);
        Long before = null;
        String b = r.param("before");
        if (b != null) {
            try {
                before = Long.parseLong(b);
            } catch (NumberFormatException e) {
                throw ApiException.badRequest("before must be an audit log id", "before");
            }
        }
        List<AuditEntry> entries = store.auditLog().list(limit, before);
        ObjectNode out = F.objectNode();
        ArrayNode items = out.putArray("items");
        for (AuditEntry e : entries) {
            items.add(audit(e, false));
        }
        if (entries.size() == limit) {
            out.put("nextBefore", entries.get(entries.size() - 1).id());
        } else {
            out.putNull("nextBefore");
        }
        return out;
    }

    private static ObjectNode audit(AuditEntry e, boolean reveal) {
        ObjectNode o = F.objectNode();
        o.put("id", e.id());
        o.put("at", str(e.at()));
        o.put("actor", e.actor());
        o.put("action", e.action());
        o.put("subject", e.subject());
        o.put("count", e.count());
        ArrayNode ids = o.putArray("ids");
        e.ids().forEach(ids::add);
        JsonNode filter = e.filterJson() == null ? null : parse(e.filterJson());
        o.set("filter", filter == null || reveal ? filter : Masking.maskAll(filter));
        o.put("note", reveal ? e.note() : Masking.maskText(e.note()));
        JsonNode details = e.detailsJson() == null ? null : parse(e.detailsJson());
        o.set("details", details == null || reveal ? details : Masking.maskAll(details));
        o.put("finishedAt", str(e.finishedAt()));
        return o;
    }

    // ---------------------------------------------------------------- filters

    private DeadLetterFilter filterFromQuery(ConsoleRequest r) {
        DeadLetterFilter f = DeadLetterFilter.all();
        List<String> jobTypes = r.params("jobType");
        List<String> keys = r.params("providerKey");
        List<String> failures = r.params("failureType");
        List<String> states = r.params("state");
        if (!jobTypes.isEmpty()) {
            f = f.withJobTypes(jobTypes.toArray(String[]::new));
        }
        if (!keys.isEmpty()) {
            f = f.withProviderKeys(keys.toArray(String[]::new));
        }
        if (!failures.isEmpty()) {
            f = f.withFailureTypes(failures.toArray(String[]::new));
        }
        if (!states.isEmpty()) {
            f = f.withStates(states(states));
        }
        Instant from = time(r.param("parkedFrom"), "parkedFrom");
        Instant until = time(r.param("parkedUntil"), "parkedUntil");
        if (from != null || until != null) {
            f = f.withParkedBetween(from, until);
        }
        String text = r.param("text");
        if (text != null) {
            f = f.withText(text);
        }
        return f;
    }

    static DeadLetterFilter filterFromJson(JsonNode n) {
        DeadLetterFilter f = DeadLetterFilter.all();
        List<String> jobTypes = strings(n, "jobTypes", "jobType");
        List<String> keys = strings(n, "providerKeys", "providerKey");
        List<String> failures = strings(n, "failureTypes", "failureType");
        List<String> states = strings(n, "states", "state");
        if (!jobTypes.isEmpty()) {
            f = f.withJobTypes(jobTypes.toArray(String[]::new));
        }
        if (!keys.isEmpty()) {
            f = f.withProviderKeys(keys.toArray(String[]::new));
        }
        if (!failures.isEmpty()) {
            f = f.withFailureTypes(failures.toArray(String[]::new));
        }
        if (!states.isEmpty()) {
            f = f.withStates(states(states));
        }
        Instant from = time(textOf(n, "parkedFrom"), "parkedFrom");
        Instant until = time(textOf(n, "parkedUntil"), "parkedUntil");
        if (from != null || until != null) {
            f = f.withParkedBetween(from, until);
        }
        String text = textOf(n, "text");
        if (text != null) {
            f = f.withText(text);
        }
        return f;
    }

    private static List<String> strings(JsonNode n, String plural, String singular) {
        Set<String> out = new LinkedHashSet<>();
        for (String name : List.of(plural, singular)) {
            JsonNode v = n.get(name);
            if (v == null || v.isNull()) {
                continue;
            }
            if (v.isTextual()) {
                if (!v.asText().isEmpty()) {
                    out.add(v.asText());
                }
            } else if (v.isArray()) {
                for (JsonNode e : v) {
                    if (!e.isTextual()) {
                        throw ApiException.badRequest(name + " must be strings", "filter." + name);
                    }
                    if (!e.asText().isEmpty()) {
                        out.add(e.asText());
                    }
                }
            } else {
                throw ApiException.badRequest(name + " must be a string or an array of strings", "filter." + name);
            }
        }
        return new ArrayList<>(out);
    }

    private static String textOf(JsonNode n, String name) {
        JsonNode v = n.get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw ApiException.badRequest(name + " must be a string", "filter." + name);
        }
        return v.asText().isEmpty() ? null : v.asText();
    }

    private static DeadLetterState[] states(List<String> codes) {
        List<DeadLetterState> out = new ArrayList<>();
        for (String c : codes) {
            try {
                out.add(DeadLetterState.fromCode(c));
            } catch (IllegalArgumentException e) {
                throw ApiException.badRequest("state must be parked, review, replayed or discarded, was '" + c + "'",
                        "state");
            }
        }
        return out.toArray(DeadLetterState[]::new);
    }

    /** ISO-8601 instants ({@code 2025-05-01T10:00:00Z}), offsets, or local dates and times taken as UTC. */
    static Instant time(String s, String field) {
        if (s == null || s.isBlank()) {
            return null;
        }
        String v = s.strip();
        try {
            return Instant.parse(v);
        } catch (DateTimeParseException e1) {
            try {
                return OffsetDateTime.parse(v).toInstant();
            } catch (DateTimeParseException e2) {
                try {
                    return LocalDateTime.parse(v).toInstant(ZoneOffset.UTC);
                } catch (DateTimeParseException e3) {
                    try {
                        return LocalDate.parse(v).atStartOfDay().toInstant(ZoneOffset.UTC);
                    } catch (DateTimeParseException e4) {
                        throw ApiException.badRequest(field + " must be an ISO-8601 time such as "
                                + "2025-05-01T10:00:00Z, was '" + s + "'", field);
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- helpers

    /**
     * A fallback trail (jsonb text) as the console shows it: one object per line, {@code at,
     * attempt, key, result, detail, waitMs}; details (provider words) masked unless revealed.
     */
    private static ArrayNode trail(String json, boolean reveal, boolean[] masked) {
        ArrayNode out = F.arrayNode();
        JsonNode t = json == null ? null : parse(json);
        if (t == null || !t.isArray()) {
            return out;
        }
        for (JsonNode s : t) {
            ObjectNode o = out.addObject();
            o.put("at", s.path("at").asText(null));
            if (s.path("attempt").isNumber()) {
                o.put("attempt", s.path("attempt").asInt());
            } else {
                o.putNull("attempt");
            }
            o.put("key", s.path("key").asText(null));
            o.put("result", s.path("result").asText(null));
            o.put("detail", text(s.path("detail").isTextual() ? s.path("detail").asText() : null, reveal, masked));
            if (s.path("wait_ms").isNumber()) {
                o.put("waitMs", s.path("wait_ms").asLong());
            } else {
                o.putNull("waitMs");
            }
        }
        return out;
    }

    private static void maskField(ObjectNode o, String field) {
        JsonNode v = o.get(field);
        if (v != null && v.isTextual()) {
            o.put(field, Masking.maskText(v.asText()));
        }
    }

    private static String text(String s, boolean reveal, boolean[] masked) {
        if (s == null || reveal) {
            return s;
        }
        String m = Masking.maskText(s);
        masked[0] |= !m.equals(s);
        return m;
    }

    private static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (JsonProcessingException e) {
            return F.textNode(json);
        }
    }

    private static String pretty(JsonNode n) {
        try {
            return PRETTY.writeValueAsString(n);
        } catch (JsonProcessingException e) {
            return n.toString();
        }
    }

    private static String str(Instant t) {
        return t == null ? null : t.toString();
    }
}
