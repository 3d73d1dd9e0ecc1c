package dev.layover.core;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Named jobs and their {@code after} edges (a DAG), enqueued together by
 * {@link Layover#enqueueWorkflow(java.sql.Connection, Workflow)} in one transaction. Immutable;
 * built with {@link #builder()}, which refuses a duplicate name, an edge to an unknown name and a
 * cycle ({@link WorkflowException}) before anything is written.
 *
 * <pre>{@code
 * Workflow w = Workflow.builder()
 *         .job("extract", extractText, new Pdf("doc-1"))
 *         .job("glossary", buildGlossary, new Customer("acme"))
 *         .job("translate", translate, new Doc("doc-1")).after("translate", "extract", "glossary")
 *         .build();
 * Map<String, Enqueued> jobs = layover.enqueueWorkflow(null, w);
 * }</pre>
 *
 * <p>Each job is an ordinary job: one with edges waits (run time 9999-12-31, reason
 * {@code dependencies}) until every job it runs after completed, exactly as a job enqueued with
 * {@link EnqueueOptions#withAfter} (which a workflow job's own options may also give, naming jobs
 * outside the workflow). A name is only the workflow's: the job's id is its options' key, else a
 * new time-ordered UUID.
 */
public final class Workflow {

    /**
     * One job of a workflow.
     *
     * @param name its name in the workflow
     * @param type its job type
     * @param args its args
     * @param options its options (run time, key, priority, deadline, jobs outside the workflow it runs after)
     * @param after the names of the workflow's jobs it runs after
     */
    public record Job(String name, JobType<?> type, Object args, EnqueueOptions options, List<String> after) {

        /** Copies {@code after}. */
        public Job {
            after = List.copyOf(after);
        }
    }

    private final List<Job> jobs;

    private Workflow(List<Job> jobs) {
        this.jobs = List.copyOf(jobs);
    }

    /** @return a builder of a workflow with no job */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * @return the jobs, each after every job it runs after (the order they are enqueued in; among
     *     jobs free of each other, the order they were added)
     */
    public List<Job> jobs() {
        return jobs;
    }

    /** Builds a {@link Workflow}: jobs by name, then edges; {@link #build()} checks them. */
    public static final class Builder {

        private final Map<String, Job> jobs = new LinkedHashMap<>();
        private final Map<String, Set<String>> after = new LinkedHashMap<>();

        private Builder() {}

        /**
         * Adds a job to run as soon as the jobs it runs after allow.
         *
         * @param name its name in this workflow, 1-200 characters, unique in it
         * @param type its job type (registered with the Layover that enqueues the workflow)
         * @param args its args
         * @param <A> the args type
         * @return this builder
         * @throws WorkflowException when the name is taken
         */
        public <A> Builder job(String name, JobType<A> type, A args) {
            return job(name, type, args, EnqueueOptions.now());
        }

        /**
         * Adds a job with options.
         *
         * @param name its name in this workflow, 1-200 characters, unique in it
         * @param type its job type
         * @param args its args
         * @param options its options; {@link EnqueueOptions#after()} may name jobs outside the workflow
         * @param <A> the args type
         * @return this builder
         * @throws WorkflowException when the name is taken or empty
         */
        public <A> Builder job(String name, JobType<A> type, A args, EnqueueOptions options) {
            Objects.requireNonNull(type, "type");
            Objects.requireNonNull(options, "options");
            if (name == null || name.isEmpty() || name.length() > 200) {
                throw new WorkflowException("a workflow job's name must be 1-200 characters");
            }
            if (jobs.containsKey(name)) {
                throw new WorkflowException("the workflow has a job named '" + name + "' already: names are unique");
            }
            jobs.put(name, new Job(name, type, args, options, List.of()));
            after.put(name, new LinkedHashSet<>());
            return this;
        }

        /**
         * The job {@code name} runs after the jobs named (edges; checked by {@link #build()}).
         *
         * @param name a job of this workflow
         * @param before the jobs of this workflow it runs after
         * @return this builder
         */
        public Builder after(String name, String... before) {
            after.computeIfAbsent(Objects.requireNonNull(name, "name"), k -> new LinkedHashSet<>())
                    .addAll(List.of(before));
            return this;
        }

        /**
         * Checks the edges and orders the jobs so each comes after every job it runs after.
         *
         * @return the workflow
         * @throws WorkflowException when an edge names a job the workflow does not have, a job runs
         *     after itself, or the edges make a cycle (the message names it)
         */
        public Workflow build() {
            for (Map.Entry<String, Set<String>> e : after.entrySet()) {
                if (!jobs.containsKey(e.getKey())) {
                    throw new WorkflowException("after(\"" + e.getKey() + "\", ...) names no job of the workflow");
                }
                for (String b : e.getValue()) {
                    if (!jobs.containsKey(b)) {
                        throw new WorkflowException("job '" + e.getKey() + "' runs after '" + b
                                + "', which is no job of the workflow");
                    }
                    if (b.equals(e.getKey())) {
                        throw new WorkflowException("job '" + b + "' cannot run after itself");
                    }
                }
            }
            // Kahn's order, stable: a job is placed once every job it runs after is
            Map<String, Integer> waiting = new LinkedHashMap<>();
            Map<String, List<String>> next = new LinkedHashMap<>();
            for (String n : jobs.keySet()) {
                waiting.put(n, after.get(n).size());
                next.put(n, new ArrayList<>());
            }
            after.forEach((n, bs) -> bs.forEach(b -> next.get(b).add(n)));
            Deque<String> free = new ArrayDeque<>();
            waiting.forEach((n, w) -> {
                if (w == 0) {
                    free.add(n);
                }
            });
            List<Job> ordered = new ArrayList<>();
            while (!free.isEmpty()) {
                String n = free.poll();
                Job s = jobs.get(n);
                ordered.add(new Job(n, s.type(), s.args(), s.options(), List.copyOf(after.get(n))));
                for (String m : next.get(n)) {
                    if (waiting.merge(m, -1, Integer::sum) == 0) {
                        free.add(m);
                    }
                }
            }
            if (ordered.size() < jobs.size()) {
                throw new WorkflowException("the workflow's edges make a cycle: " + cycle(waiting));
            }
            return new Workflow(ordered);
        }

        /** A cycle among the jobs left waiting, as "a → b → a" (each runs after the one before it). */
        private String cycle(Map<String, Integer> waiting) {
            String start = waiting.entrySet().stream().filter(e -> e.getValue() > 0).findFirst().orElseThrow().getKey();
            List<String> path = new ArrayList<>();
            String at = start;
            while (!path.contains(at)) {
                path.add(at);
                at = after.get(at).stream().filter(b -> waiting.get(b) > 0).findFirst().orElseThrow();
            }
            List<String> loop = new ArrayList<>(path.subList(path.indexOf(at), path.size()));
            java.util.Collections.reverse(loop);
            loop.add(loop.get(0));
            return String.join(" → ", loop);
        }
    }
}
