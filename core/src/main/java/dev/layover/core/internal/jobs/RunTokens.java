package dev.layover.core.internal.jobs;

/**
 * The tokens of one run, for its job's history row ({@code layover.job_history} token columns):
 * what its provider call reported and what its reservation was. Each is null when unknown.
 *
 * @param input every input token reported (cache reads and writes included)
 * @param output the output tokens reported
 * @param cached the input tokens read from a prompt cache
 * @param estimated the run's reservation (input estimate + output ceiling), null when none
 */
public record RunTokens(Long input, Long output, Long cached, Long estimated) {

    /** Nothing reported, nothing reserved. */
    public static final RunTokens NONE = new RunTokens(null, null, null, null);
}
