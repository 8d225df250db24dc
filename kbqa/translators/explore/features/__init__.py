"""The features stage: what the ranker reads of each candidate.

- `candidates.py`: similarity to the question (embedder), lexical overlap, the case bank's votes;
- `structure.py`: the graph's structure (`s_*`, `fam:*`) and the question's words (`qw:*`, `q0:*`);
- `prior.py`: the structure prior P(shape | the question's words), with `structure_prior.json`;
- `projection.py`: how the answer columns line up with the attributes the question names (`p_*`);
- `roles.py`: the question's words next to each part the candidate uses, by the part's role (`rw:*`, `ra:*`, `r_*`);
- `answers.py`: how each checked candidate's answers agree with the others' (`x_*`);
- `listwise.py`: each graded feature against the best of the question's candidates (`d:*`).
"""
