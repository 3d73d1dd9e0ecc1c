package dev.layover.samples.translate;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The report's fourth part: the summaries ({@link SummaryJob}), deferrable work that went by
 * batch at half price. Every figure is read back: the summaries from {@code layover.job_history}
 * joined with {@code layover.batch_items}, the batches and their tokens from
 * {@code layover.batch_status}, the batches created, the lines charged and their tokens from the
 * fake provider's counters ({@code FakeBatches}). Only this run's rows count (finished or created
 * since the demo started).
 *
 * @param translated translations completed: each one asked for a summary
 * @param done summaries completed
 * @param byBatch summaries completed from a batch line
 * @param open summaries neither completed nor done with: still queued, or parked
 * @param batches this run's batches of {@link SummaryJob#KEY} in {@code layover.batch_status}
 * @param batchesEnded those that ended (every line answered)
 * @param batchesCreated batches the fake provider created
 * @param linesChargedTwice lines the fake provider charged more than once; must be 0
 * @param batchTokens input plus output tokens of the batches' lines, as {@code layover.batch_status} has them
 * @param savedTokens {@code layover.batch_status.saved_tokens}: the batch tokens times the discount
 * @param providerTokens input plus output tokens of the lines the fake provider answered
 * @param directTokens tokens of the summaries called directly (their history rows)
 * @param discount the batches' discount ({@code layover.batch_status.discount}; 0.5 by default), 0 without batches
 */
public record BatchReport(long translated, long done, long byBatch, long open, long batches, long batchesEnded,
        int batchesCreated, int linesChargedTwice, long batchTokens, long savedTokens, long providerTokens,
        long directTokens, double discount) {

    /** @return summaries completed by a direct call */
    public long direct() {
        return done - byBatch;
    }

    /**
     * What the summaries cost relative to calling every one of them directly: batch tokens at the
     * batch price (their tokens minus the saving) plus direct tokens at full price, over all their
     * tokens at full price. With every summary by batch at OpenAI's 0.5 discount: 0.50.
     *
     * @return the share, 1.0 when there were no tokens
     */
    public double relativeCost() {
        long full = batchTokens + directTokens;
        return full == 0 ? 1.0 : (double) (batchTokens - savedTokens + directTokens) / full;
    }

    /** @return what is wrong with the fourth part; empty when every check passes */
    public List<String> problems() {
        List<String> p = new ArrayList<>();
        if (done + open != translated) {
            p.add(translated + " translations but " + (done + open) + " summaries");
        }
        if (open > 0) {
            p.add(open + " summaries not done at the report");
        }
        if (direct() > 0) {
            p.add(direct() + " summaries were called directly instead of by batch");
        }
        if (linesChargedTwice != 0) {
            p.add(linesChargedTwice + " batch lines charged twice");
        }
        if (batches != batchesCreated) {
            p.add(batches + " batches in layover.batch_status but " + batchesCreated + " created at the provider");
        }
        if (batchTokens != providerTokens) {
            p.add("the batches' tokens (" + batchTokens + ") differ from what the provider counted (" + providerTokens + ")");
        }
        return p;
    }

    /**
     * Prints the part, its heading first.
     *
     * @param out where
     */
    public void print(PrintStream out) {
        out.println();
        out.printf("Deferrable work went by batch at half price (summaries, deadline %d h)%n", SummaryJob.DEADLINE.toHours());
        DemoReport.row(out, "summaries done by batch", byBatch, "of " + done + " done (one per translated document: "
                + translated + "); called directly " + direct() + ", still open " + open);
        DemoReport.row(out, "batches", batches, "ended " + batchesEnded + "; created at the provider " + batchesCreated);
        DemoReport.row(out, "lines charged twice", linesChargedTwice, "must be 0");
        DemoReport.row(out, "tokens by batch", batchTokens, "the provider counted " + providerTokens + "; direct " + directTokens);
        out.printf("  %-31s %7.2f   (batch tokens x %.2f + direct tokens) / all tokens = %d / %d%n",
                "cost relative to direct calls", relativeCost(), 1 - discount, batchTokens - savedTokens + directTokens,
                batchTokens + directTokens);
    }
}
