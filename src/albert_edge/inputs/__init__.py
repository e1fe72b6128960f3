"""What users hand the toolkit, read with bounds: JSON (`jsonfile`), any user file (`userfile`), the
range of every numeric option (`option_ranges`), and the one TSV / text-lines reader with corpus
splits (`data`). Every defect is one error naming the file or option.
"""
