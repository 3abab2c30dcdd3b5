"""Plots (matplotlib Figures, never shown) and the HTML/Markdown run reports.
"""
