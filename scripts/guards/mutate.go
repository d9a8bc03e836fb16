package main

func cmdMutate(args []string) error { return nil }
