package dev.layover.core.internal.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.kagkarlsson.scheduler.task.CompletionHandler;
import dev.layover.core.batch.BatchResult;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.batch.Batching;
import dev.layover.core.internal.batch.BatchKeys;
import dev.layover.core.internal.batch.BatchRoute;
import dev.layover.core.internal.batch.BatchStore;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.internal.jobs.RunTokens;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.ProviderClassifier;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The batch step of a picked job of a batchable type whose provider key has batching, before any
 * provider admission ({@link BatchRoute} decides, in database time):
 * <ul>
 *   <li>its line is stored: the line becomes its outcome, written by {@link OutcomeWriter#applyBatchLine};
 *   <li>it is in a live batch: it waits for its line ({@link OutcomeWriter#waitForBatch}), or leaves
 *       a batch not yet submitted when its deadline has come too close, and is called directly;
 *   <li>it is deferrable: it is gathered, with up to {@link #GATHER_ALONG} more of its key's due
 *       backlog ({@link OutcomeWriter#gather});
 *   <li>anything else (no deadline, too close, its batch refused by the provider): called directly,
 *       as without batching.
 * </ul>
 */
final class BatchStep {

    private static final Logger LOG = LoggerFactory.getLogger(BatchStep.class);

    /** How many more due jobs of the key a gather takes along, so a backlog is not gathered pick by pick. */
    static final int GATHER_ALONG = 500;

    /** What the step leaves to write, and whether it ends the job done. */
    record Step(CompletionHandler<byte[]> write, boolean done) {}

    private final BatchStore store;
    private final BatchKeys keys;
    private final OutcomeWriter writer;
    private final ProviderClassifier classifier;
    private final ObjectMapper json = new ObjectMapper();

    BatchStep(BatchStore store, BatchKeys keys, OutcomeWriter writer, ProviderClassifier classifier) {
        this.store = store;
        this.keys = keys;
        this.writer = writer;
        this.classifier = classifier;
    }

    /** @return the run's step, or null when the job is called directly */
    <A> Step route(JobRun run, Registry.Entry<A> entry, A args, String key) {
        Batching<A> batching = entry.type().batching();
        BatchSettings s = batching == null ? null : keys.of(key);
        if (s == null) {
            return null;
        }
        BatchStore.PickState st;
        try {
            st = store.pickState(run.taskName(), run.id());
        } catch (RuntimeException e) {
            // never call a job that may be in a batch: it would be charged twice
            String why = "batch state unreadable: " + Errors.safeMessage(e);
            return new Step((c, o) -> writer.hold(run, key, "batch_state_unavailable", why, null), false);
        }
        if (st == null) {
            return new Step((c, o) -> { }, false); // the row is gone (cancelled, parked): nothing to run or write
        }
        if (st.item() != null && "result".equals(st.itemState())) {
            return apply(run, batching, key, st, args, s);
        }
        if (st.item() != null && "gathered".equals(st.itemState())) {
            boolean unsent = "open".equals(st.batchState()) || "sealed".equals(st.batchState());
            if (unsent && BatchRoute.mustLeave(st.now(), st.latest(), s)) {
                try {
                    if (store.leave(st.item())) {
                        return null;
                    }
                } catch (RuntimeException e) {
                    String why = "batch state unreadable: " + Errors.safeMessage(e);
                    return new Step((c, o) -> writer.hold(run, key, "batch_state_unavailable", why, null), false);
                }
            }
            Instant until = BatchRoute.waitUntil(st.now(), st.latest(), s);
            String detail = "in batch " + st.batchId();
            return new Step((c, o) -> writer.waitForBatch(run, until, detail), false);
        }
        if (st.item() != null && "failed".equals(st.batchState())) {
            return null; // the provider refused its batch: do not gather it again
        }
        Instant latest = BatchRoute.latest(st.deadline(), st.enqueuedAt(), batching.tolerance());
        if (!BatchRoute.gather(st.now(), latest, s)) {
            return null;
        }
        String request = request(batching, args, run.label());
        if (request == null || request.getBytes(StandardCharsets.UTF_8).length > s.maxBytes()) {
            return null;
        }
        Instant now = st.now();
        BatchStore.Line first = new BatchStore.Line(run.id(), run.version(), request, latest,
                BatchRoute.waitUntil(now, latest, s));
        Double tolerance = batching.tolerance() == null ? null : batching.tolerance().toMillis() / 1000.0;
        BatchStore.Backlog backlog = new BatchStore.Backlog(GATHER_ALONG, BatchRoute.needSeconds(s), tolerance,
                candidates -> lines(candidates, entry, batching, s, now));
        return new Step((c, o) -> writer.gather(run, key, s, first, backlog), false);
    }

    private <A> List<BatchStore.Line> lines(List<BatchStore.Candidate> candidates, Registry.Entry<A> entry,
            Batching<A> batching, BatchSettings s, Instant now) {
        List<BatchStore.Line> out = new ArrayList<>(candidates.size());
        for (BatchStore.Candidate c : candidates) {
            A args;
            try {
                args = entry.codec().read(c.data());
            } catch (Exception | StackOverflowError e) {
                continue; // its own pick parks it (or waits for the worker that wrote it)
            }
            Instant latest = BatchRoute.latest(c.deadline(), c.enqueuedAt(), batching.tolerance());
            if (!BatchRoute.gather(now, latest, s)) {
                continue;
            }
            String request = request(batching, args, entry.type().name() + "/" + c.id());
            if (request != null && request.getBytes(StandardCharsets.UTF_8).length <= s.maxBytes()) {
                out.add(new BatchStore.Line(c.id(), c.version(), request, latest, BatchRoute.waitUntil(now, latest, s)));
            }
        }
        return out;
    }

    /** The job's request body as JSON text, or null (logged) when the job type's function cannot make one. */
    private <A> String request(Batching<A> batching, A args, String label) {
        try {
            Object r = batching.request().apply(args);
            if (r == null) {
                LOG.warn("Job {}: the batch request function gave nothing; the job is called directly", label);
                return null;
            }
            if (r instanceof CharSequence text) {
                JsonNode node = json.readTree(text.toString());
                if (node == null || !node.isObject()) {
                    LOG.warn("Job {}: the batch request is not a JSON object; the job is called directly", label);
                    return null;
                }
                return json.writeValueAsString(node);
            }
            return json.writeValueAsString(r);
        } catch (Exception | StackOverflowError e) {
            LOG.warn("Job {}: the batch request function failed ({}); the job is called directly", label,
                    Errors.safeMessage(e));
            return null;
        }
    }

    /** A stored line becomes the job's outcome; the reschedule or retry it may give clears the job's item. */
    private <A> Step apply(JobRun run, Batching<A> batching, String key, BatchStore.PickState st, A args, BatchSettings s) {
        Outcome outcome;
        if ("succeeded".equals(st.kind())) {
            BatchResult result = new BatchResult("lo-" + st.item(), st.batchId(), st.status(),
                    st.result() == null ? "" : st.result(), st.inputTokens(), st.outputTokens());
            try {
                outcome = batching.result().apply(args, result);
                if (outcome == null) {
                    outcome = new Outcome.Retry("the batch result function returned null", null, null);
                }
            } catch (RuntimeException | StackOverflowError e) {
                outcome = new Outcome.Retry("the batch result function failed: " + Errors.safeMessage(e), e, null);
            }
        } else {
            int status = st.status();
            outcome = classifier.classify(s.transport().provider(), status, null, st.result())
                    .map(Classification::toOutcome)
                    .orElseGet(() -> new Outcome.Transient("batch line errored with status " + status, null));
        }
        JobRun r = run.withBatchItem(st.item()).withTokens(new RunTokens(st.inputTokens(), st.outputTokens(), null, null));
        Outcome o = outcome;
        return new Step((c, ops) -> writer.applyBatchLine(r, key, o), o.kind() == Outcome.Kind.DONE);
    }
}
