"""One document model for everything patchsim writes for people to read (the run report,
sweeps, tunes, price studies, training reports): sections of paragraphs, notes, lists,
tables and figures, rendered to HTML and Markdown by one renderer, with one set of number
formatters and one patch palette. It sits at the bottom of the package (it knows nothing of
games or statistics), so every layer above may build documents."""
