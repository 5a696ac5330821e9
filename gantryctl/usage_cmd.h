/*
 * `gantryctl usage`: declared vs used bandwidth per job, from the node
 * plugins' metrics endpoints.
 */
#pragma once

/* Runs `gantryctl usage ...` (@argv after "usage"); returns the exit code. */
int gantry_usage_main(int argc, char **argv);
